/**
 * TensorBoard event files, `events.out.tfevents.*` (the HF Trainer writes them under `output_dir/runs/<date>_<host>/`
 * whenever tensorboard is installed; OpenRLHF and ROLL log only there): TFRecord frames, each an `Event` protobuf.
 * Scalars come as `simple_value` (torch's SummaryWriter, tensorboardX) or as a one-element tensor (TF2
 * `tf.summary.scalar`); the values of one step become one metric record, tags mapped to canonical names
 * (`train/reward` -> `reward`). Histograms, images, text and the file-version header are noise.
 */
import type { FileInfo, RecordFormat } from '../../records.ts';
import { baseName } from '../common.ts';

export const tfEvents: RecordFormat = {
  id: 'tfEvents',
  kind: 'records',
  detect: (file: FileInfo) => (baseName(file.relPath).startsWith('events.out.tfevents.') ? 'yes' : 'no'),
  // the protobuf decoder is loaded with the first event file: commands that never read one start without it
  open: async (_file, maxRecordBytes) => (await import('./tfEventsDecoder.ts')).decoder(maxRecordBytes),
};
