/**
 * "Trust this folder?": when a message cell of a notebook fails because its folder is not
 * trusted (the agent kernel's `UntrustedFolder` error: the agent asks for the `toolbox/`
 * beside the file, or the file names its own `api_base`), offer to trust the folder, as
 * `tce trust FOLDER` would, then run the cell again.
 *
 * Only a refusal the kernel reports for a cell the user just ran opens the dialog (a saved
 * error output in a file opens nothing); the dialog names the folder and what trusting it
 * means; the trust is recorded by the server (`/percent-agent/trust`, authenticated like the
 * contents API) in the user's config directory, never in the project.
 */

import { Dialog, showDialog } from '@jupyterlab/apputils';
import { URLExt } from '@jupyterlab/coreutils';
import { NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { ServerConnection } from '@jupyterlab/services';
import { Widget } from '@lumino/widgets';

import { isMessageNotebook } from './notebook';

export const UNTRUSTED = 'UntrustedFolder';
const ROUTE = 'percent-agent/trust';

interface ITrustAnswer {
  folder: string;
  trusted: boolean;
}

async function requestTrust(
  path: string,
  method: 'GET' | 'POST'
): Promise<ITrustAnswer> {
  const settings = ServerConnection.makeSettings();
  let url = URLExt.join(settings.baseUrl, ROUTE);
  const init: RequestInit = { method };
  if (method === 'GET') {
    url += URLExt.objectToQueryString({ path });
  } else {
    init.body = JSON.stringify({ path });
  }
  const response = await ServerConnection.makeRequest(url, init, settings);
  if (!response.ok) {
    throw new Error(`${response.status} ${await response.text()}`);
  }
  return (await response.json()) as ITrustAnswer;
}

/** Offer to trust the folder of `panel` after a refusal; true when the user trusted it. */
export async function offerTrust(panel: NotebookPanel, refusal: string): Promise<boolean> {
  const path = panel.context.path;
  const { folder, trusted } = await requestTrust(path, 'GET');
  if (trusted) {
    return false; // already trusted: the refusal was about something else
  }
  const body = document.createElement('div');
  body.className = 'jp-PercentAgent-trustDialog';
  const what = document.createElement('p');
  what.textContent = refusal;
  const means = document.createElement('p');
  means.textContent =
    `Trusting ${folder} lets the code in its toolbox/ run as you, with your keys, and ` +
    'lets its files send conversations to the model servers they name. Trust only a ' +
    'folder whose contents you would run yourself.';
  body.append(what, means);
  const result = await showDialog({
    title: 'Trust this folder?',
    body: new Widget({ node: body }),
    buttons: [
      Dialog.cancelButton({ label: 'Not now' }),
      Dialog.warnButton({ label: 'Trust folder' })
    ]
  });
  if (!result.button.accept) {
    return false;
  }
  await requestTrust(path, 'POST');
  return true;
}

/** Watch every run for an `UntrustedFolder` refusal (once per application). */
export function watchTrustRefusals(): void {
  NotebookActions.executed.connect((_, { notebook, cell, success, error }) => {
    if (success || error?.errorName !== UNTRUSTED) {
      return;
    }
    const panel = notebook.parent;
    if (!(panel instanceof NotebookPanel) || !isMessageNotebook(panel)) {
      return;
    }
    void offerTrust(panel, error.errorValue).then(async trusted => {
      if (trusted && !panel.isDisposed) {
        notebook.activeCellIndex = notebook.widgets.indexOf(cell);
        await NotebookActions.run(notebook, panel.sessionContext);
      }
    });
  });
}
