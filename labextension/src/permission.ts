/**
 * "Allow this?": an external (ACP) agent's permission request, asked in a dialog.
 *
 * The Agent kernel asks the person over Jupyter's stdin channel (`input_request`), as
 * `input()` does: a front end that knows nothing of this shows the request as a plain prompt
 * and sends back what the person types. The request's content also carries the request as
 * JSON (`percent_agent_permission`: the tool's title, kind, locations, command, diffs and the
 * agent's options); for such a request this extension shows a dialog instead of the prompt
 * box (the tool, its command or its diff shown as a diff, one button per option the agent
 * offers) and answers with the chosen option's id. Closing the dialog rejects.
 *
 * Everything in the request is the agent's (and so perhaps a model's) text: it goes into
 * the dialog as text, never as HTML.
 */

import { Dialog, showDialog } from '@jupyterlab/apputils';
import { OutputArea } from '@jupyterlab/outputarea';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { Widget } from '@lumino/widgets';

import { renderDiff } from './diff';
import { el } from './dom';
import { IPermissionRequest, permissionRequest } from './permissionrequest';
import { trans } from './translation';

/** The dialog's body: what the agent would do, its command, its diffs. */
function requestBody(request: IPermissionRequest): HTMLElement {
  const body = el('div', 'jp-PercentAgent-permission');
  const what = el('p', 'jp-PercentAgent-permissionTitle');
  what.appendChild(el('strong', '', request.title));
  if (request.kind) {
    what.appendChild(
      el('span', 'jp-PercentAgent-permissionKind', request.kind)
    );
  }
  body.appendChild(what);
  for (const where of request.locations) {
    body.appendChild(el('div', 'jp-PercentAgent-permissionLocation', where));
  }
  if (request.command) {
    body.appendChild(
      el('pre', 'jp-PercentAgent-permissionCommand', request.command)
    );
  }
  for (const diff of request.diffs) {
    body.appendChild(renderDiff(diff.diff));
  }
  return body;
}

const OPTION_CLASS = 'jp-PercentAgent-permissionOption-';

/**
 * Ask the person; the chosen option's id, or `''` (rejected) when they closed the dialog.
 */
export async function askPermission(
  request: IPermissionRequest
): Promise<string> {
  const t = trans();
  const buttons = request.options.map((option, index) =>
    Dialog.createButton({
      label: option.name,
      accept: option.kind.startsWith('allow'),
      // allowing for good is the answer to think twice about
      displayType: option.kind === 'allow_always' ? 'warn' : 'default',
      className: `${OPTION_CLASS}${index} jp-PercentAgent-permission-${option.kind}`
    })
  );
  const result = await showDialog({
    title: request.agent
      ? t.__('%1 asks permission', request.agent)
      : t.__('An agent asks permission'),
    body: new Widget({ node: requestBody(request) }),
    buttons: buttons.length ? buttons : [Dialog.cancelButton()],
    hasClose: true
  });
  const index = buttons.findIndex(
    button => button.className === result.button.className
  );
  return index >= 0 ? request.options[index].id : '';
}

let installed = false;

/**
 * Show the Agent kernel's permission requests as a dialog in every output area (any
 * other input request keeps JupyterLab's own prompt box). Once per page.
 */
export function installPermissionDialogs(): void {
  if (installed) {
    return;
  }
  installed = true;
  const proto = OutputArea.prototype as unknown as {
    onInputRequest(
      msg: KernelMessage.IInputRequestMsg,
      future: Kernel.IShellFuture
    ): void;
  };
  const prompt = proto.onInputRequest;
  proto.onInputRequest = function (
    this: OutputArea,
    msg: KernelMessage.IInputRequestMsg,
    future: Kernel.IShellFuture
  ): void {
    const request = permissionRequest(msg.content);
    if (request === null) {
      return prompt.call(this, msg, future);
    }
    void askPermission(request)
      .catch(reason => {
        console.error('jupyter-percent-agent: permission', reason);
        return '';
      })
      .then(value => {
        if (!future.isDisposed) {
          future.sendInputReply({ status: 'ok', value }, msg.header);
        }
      });
  };
}
