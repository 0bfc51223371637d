/**
 * "Trust this folder?": when the agent kernel refuses a message cell because its folder is
 * not trusted (the agent asks for the `toolbox/` beside the file, or the file names its own
 * `api_base`), offer to trust the folder, as `tce trust FOLDER` would, then run the cell
 * again.
 *
 * Only the kernel's own refusal opens the dialog: the kernel tells it on the comm of the run
 * of a cell the user just ran (`kernelcomm.ts`: `untrusted_folder`, the folder and the
 * refusal's line), where no code in a cell can write. An error's name and text, which a
 * cell's code chooses, open nothing, and neither does a saved error output. The dialog names
 * the folder the kernel named and what trusting it means; the trust is recorded by the
 * server (`/percent-agent/trust`, authenticated like the contents API) in the user's config
 * directory, never in the project.
 */

import { Dialog, showDialog } from '@jupyterlab/apputils';
import { NotebookPanel } from '@jupyterlab/notebook';
import { Widget } from '@lumino/widgets';

import { addRunHook } from './kernelcomm';
import { IRunOutcome } from './runledger';
import { runCellModels } from './run';
import { requestServer } from './server';
import { trans } from './translation';

const ROUTE = 'percent-agent/trust';

/** The kernel's refusal: the folder whose trust would allow the cell, and why it refused. */
export interface ITrustRefusal {
  folder: string;
  refused: string;
}

interface ITrustAnswer {
  folder: string;
  trusted: boolean;
}

function requestTrust(
  folder: string,
  method: 'GET' | 'POST'
): Promise<ITrustAnswer> {
  return method === 'GET'
    ? requestServer<ITrustAnswer>(ROUTE, { method }, { folder })
    : requestServer<ITrustAnswer>(ROUTE, {
        method,
        body: JSON.stringify({ folder })
      });
}

/** The kernel's refusal in what it told of a failed run, or `null` when it told none. */
export function trustRefusal(
  outcome: IRunOutcome,
  success: boolean
): ITrustRefusal | null {
  const marker = outcome['untrusted_folder'] as
    { [key: string]: unknown } | undefined;
  if (
    success ||
    typeof marker !== 'object' ||
    marker === null ||
    typeof marker['folder'] !== 'string' ||
    typeof marker['refused'] !== 'string'
  ) {
    return null;
  }
  return { folder: marker['folder'], refused: marker['refused'] };
}

/** Offer to trust the folder the kernel refused for; true when the user trusted it. */
export async function offerTrust(refusal: ITrustRefusal): Promise<boolean> {
  const { folder, trusted } = await requestTrust(refusal.folder, 'GET');
  if (trusted) {
    return false; // already trusted: the refusal was about something else
  }
  const body = document.createElement('div');
  body.className = 'jp-PercentAgent-trustDialog';
  const what = document.createElement('p');
  what.textContent = refusal.refused;
  const means = document.createElement('p');
  const t = trans();
  means.textContent = t.__(
    'Trusting %1 lets the code in its toolbox/ run as you, with your keys, and lets its ' +
      'files send conversations to the model servers they name. Trust only a folder ' +
      'whose contents you would run yourself.',
    folder
  );
  body.append(what, means);
  const result = await showDialog({
    title: t.__('Trust this folder?'),
    body: new Widget({ node: body }),
    buttons: [
      Dialog.cancelButton({ label: t.__('Not now') }),
      Dialog.warnButton({ label: t.__('Trust folder') })
    ]
  });
  if (!result.button.accept) {
    return false;
  }
  await requestTrust(refusal.folder, 'POST');
  return true;
}

/** Offer to trust the folder on every refusal the kernel of message notebook `panel`
 * reports, and run the refused cell again once the user trusted it. */
export function watchTrustRefusals(panel: NotebookPanel): void {
  addRunHook(panel, {
    ended: (refused, outcome, success) => {
      const refusal = trustRefusal(outcome, success);
      if (refusal === null || panel.isDisposed) {
        return;
      }
      // the refused cell, wherever it is once the user has answered
      void offerTrust(refusal)
        .then(async trusted => {
          if (trusted) {
            await runCellModels(panel, [refused]);
          }
        })
        .catch(reason => console.error('jupyter-percent-agent: trust', reason));
    }
  });
}
