/**
 * verl logs `training/epoch` as the integer index of the epoch (restarting at 0 when a run resumes), so epoch
 * milestones need a fractional epoch: step / steps-per-epoch. Steps per epoch come from the total steps (tqdm
 * `Training Progress: k/N` or "Total training steps: N") and `total_epochs` of the printed config, or else
 * from the steps at which `training/epoch` ticks over.
 */
export class VerlEpoch {
  private totalSteps: number | undefined;
  private totalEpochs: number | undefined;
  private learned: number | undefined;
  private firstStep: number | undefined;
  private lastEpoch: number | undefined;
  /** the step at which `lastEpoch` was first seen, when that was a tick (not the first record of the file) */
  private tickStep: number | undefined;

  setTotalSteps(n: number): void {
    if (n > 0) this.totalSteps = n;
  }

  setTotalEpochs(n: number): void {
    if (n > 0) this.totalEpochs = n;
  }

  stepsPerEpoch(): number | undefined {
    if (this.totalSteps !== undefined && this.totalEpochs !== undefined) return this.totalSteps / this.totalEpochs;
    return this.learned;
  }

  /** The fractional epoch after `step`, given the integer `training/epoch` logged with it. */
  epochAt(step: number, intEpoch: number | undefined): number | undefined {
    this.firstStep ??= step;
    if (intEpoch !== undefined && Number.isInteger(intEpoch)) this.observe(step, intEpoch);
    const spe = this.stepsPerEpoch();
    return spe === undefined || spe <= 0 ? undefined : step / spe;
  }

  private observe(step: number, epoch: number): void {
    if (this.lastEpoch !== undefined && epoch === this.lastEpoch + 1 && step > (this.tickStep ?? 0)) {
      if (this.tickStep !== undefined) this.learned = step - this.tickStep;
      // a run that started at step 1 with epoch 0: epoch e begins at step e * spe + 1
      else if (this.firstStep === 1 && epoch > 0) this.learned = (step - 1) / epoch;
      this.tickStep = step;
    }
    this.lastEpoch = epoch;
  }
}
