/**
 * The name and the Markdown of an image pasted into a message (no DOM, no JupyterLab: jest
 * tests it). The image is saved as a file beside the conversation, and the message gets
 * `![pasted image](NAME)`, which sends it to the model as any image the message names.
 */

/** The image types a paste is saved for, and the extension each is saved with. */
export const PASTED_IMAGE_TYPES: { [mime: string]: string } = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/gif': 'gif',
  'image/webp': 'webp'
};

function two(n: number): string {
  return String(n).padStart(2, '0');
}

/**
 * The file name, in the conversation's folder, of an image of type `mime` pasted into the
 * conversation at `notebookName` (`trip.msg.md`) at `when`: `trip-pasted-20261128-010203.png`,
 * then `-2`, `-3`... for the `attempt`-th name tried (a name already taken is never
 * overwritten). Never a hidden name: the trust rules would refuse to send it.
 */
export function pastedImageName(
  notebookName: string,
  mime: string,
  when: Date,
  attempt = 1
): string {
  let stem = notebookName.replace(/(\.msg)?\.[^.]+$/, '');
  if (stem === '' || stem.startsWith('.')) {
    stem = 'message';
  }
  const stamp =
    `${when.getFullYear()}${two(when.getMonth() + 1)}${two(when.getDate())}-` +
    `${two(when.getHours())}${two(when.getMinutes())}${two(when.getSeconds())}`;
  const suffix = attempt > 1 ? `-${attempt}` : '';
  return `${stem}-pasted-${stamp}${suffix}.${PASTED_IMAGE_TYPES[mime] ?? 'png'}`;
}

/** The Markdown image for the file `name` of the message's folder. */
export function imageMarkdown(name: string): string {
  const target = /[\s()<>]/.test(name) ? `<${name}>` : name;
  return `![pasted image](${target})`;
}
