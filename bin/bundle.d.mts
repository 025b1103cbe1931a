// The types of bin/bundle.mjs, which bin/rlwatch imports as plain JavaScript before anything is compiled.
export const BUNDLE: string;
export function bundleIsCurrent(root: string): boolean;
