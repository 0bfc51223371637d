/**
 * An image pasted into a message cell is saved as a file beside the conversation and the
 * message gets `![pasted image](NAME)` at the cursor (`pastedimage.ts`): the runtime sends
 * an image a message names to the model. A message cell is a code cell of the notebook, and
 * nbformat keeps attachments only on Markdown and raw cells; a file is kept as it was pasted,
 * through save, reopen and jupytext, and the message stays plain text.
 *
 * A paste into a `[code]` cell, or with no image, is left to the editor.
 */

import { showErrorMessage } from '@jupyterlab/apputils';
import { Cell } from '@jupyterlab/cells';
import { PathExt } from '@jupyterlab/coreutils';
import { NotebookPanel } from '@jupyterlab/notebook';
import { Contents } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';

import {
  imageMarkdown,
  PASTED_IMAGE_TYPES,
  pastedImageName
} from './pastedimage';
import { trans } from './translation';

/** Whether `cell` is a message (or another cell that asks an agent), not a `[code]` cell. */
function isMessageCell(cell: Cell): boolean {
  if (cell.model.type !== 'code') {
    return false;
  }
  const ns = cell.model.getMetadata('percent_agent') as
    { type?: unknown } | undefined;
  return ns?.type === undefined || ns.type === 'async';
}

function base64Of(file: Blob): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => {
      const url = String(reader.result);
      resolve(url.slice(url.indexOf(',') + 1));
    };
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

async function exists(
  contents: Contents.IManager,
  path: string
): Promise<boolean> {
  try {
    await contents.get(path, { content: false });
    return true;
  } catch {
    return false;
  }
}

/** Save `file` beside the notebook under a name not taken yet; its name. */
async function saveBeside(
  panel: NotebookPanel,
  contents: Contents.IManager,
  file: File
): Promise<string> {
  const notebookPath = panel.context.localPath;
  const folder = PathExt.dirname(notebookPath);
  const when = new Date();
  const content = await base64Of(file);
  for (let attempt = 1; ; attempt++) {
    const name = pastedImageName(
      PathExt.basename(notebookPath),
      file.type,
      when,
      attempt
    );
    const path = folder ? `${folder}/${name}` : name;
    if (!(await exists(contents, path))) {
      await contents.save(path, { type: 'file', format: 'base64', content });
      return name;
    }
  }
}

async function pasteInto(
  panel: NotebookPanel,
  contents: Contents.IManager,
  cell: Cell,
  files: File[]
): Promise<void> {
  const links: string[] = [];
  for (const file of files) {
    links.push(imageMarkdown(await saveBeside(panel, contents, file)));
  }
  const editor = cell.editor;
  const text = links.join('\n');
  const source = cell.model.sharedModel;
  const offset = editor
    ? editor.getOffsetAt(editor.getCursorPosition())
    : source.getSource().length;
  source.updateSource(offset, offset, text);
  const after = editor?.getPositionAt(offset + text.length);
  if (editor && after) {
    editor.setCursorPosition(after);
  }
}

/** Save the images pasted into the message cells of `panel`, and link them there. */
export function watchPastedImages(
  panel: NotebookPanel,
  contents: Contents.IManager
): IDisposable {
  const node = panel.content.node;
  const onPaste = (event: ClipboardEvent): void => {
    const files = Array.from(event.clipboardData?.files ?? []).filter(
      file => file.type in PASTED_IMAGE_TYPES
    );
    const target = event.target as Node | null;
    const cell = panel.content.widgets.find(
      widget => target !== null && widget.node.contains(target)
    );
    if (files.length === 0 || !cell || !isMessageCell(cell)) {
      return;
    }
    // before the editor sees it: the image's bytes never land in the message's text
    event.preventDefault();
    event.stopPropagation();
    void pasteInto(panel, contents, cell, files).catch(reason => {
      void showErrorMessage(
        trans().__('The pasted image was not saved'),
        reason
      );
    });
  };
  node.addEventListener('paste', onPaste, true);
  let disposed = false;
  return {
    get isDisposed() {
      return disposed;
    },
    dispose() {
      disposed = true;
      node.removeEventListener('paste', onPaste, true);
    }
  };
}
