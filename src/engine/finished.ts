import type { Store } from '../store/store.ts';

/**
 * Whether the run has finished (a finished run is never stalled nor stuck): today, it logged the Trainer's
 * end-of-training summary (`train_runtime`). The one place that decides it, for the stall rules to ask.
 */
export function isFinished(store: Store, runId: number): boolean {
  return store.points.metricsOf(runId).includes('train_runtime');
}
