/** A problem with the user's input (config, arguments, names): printed as one line, exit 1; a private reply in chat.
 * In its own module so that anything may throw it without importing the config loader (and, through it, the
 * platform list). */
export class UserError extends Error {}
