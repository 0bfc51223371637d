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
import { CodeCell } from '@jupyterlab/cells';
import { NotebookPanel } from '@jupyterlab/notebook';
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

/** The permission request each kernel has asked and not yet had answered, as it arrived. */
const asked = new WeakMap<
  Kernel.IKernelConnection,
  KernelMessage.IInputRequestMsg
>();
const heard = new WeakSet<Kernel.IKernelConnection>();
const watchedAreas = new WeakSet<OutputArea>();

/** Note the Agent kernel's permission requests as they arrive (`anyMessage` is emitted
 * before the request is handed to the cell's output area). */
function hearRequests(kernel: Kernel.IKernelConnection): void {
  if (heard.has(kernel)) {
    return;
  }
  heard.add(kernel);
  kernel.anyMessage.connect((_, { msg, direction }) => {
    if (
      direction === 'recv' &&
      msg.channel === 'stdin' &&
      KernelMessage.isInputRequestMsg(msg) &&
      permissionRequest(msg.content) !== null
    ) {
      asked.set(kernel, msg);
    }
  });
}

/**
 * Ask a cell's permission request in a dialog: JupyterLab's prompt box for it is hidden and
 * the answer goes back on the cell's request (`OutputArea.future.sendInputReply`).
 */
function onInputRequested(
  panel: NotebookPanel,
  area: OutputArea,
  stdin: Widget
): void {
  const kernel = panel.sessionContext.session?.kernel;
  const msg = kernel ? asked.get(kernel) : undefined;
  const request = msg ? permissionRequest(msg.content) : null;
  if (!kernel || !msg || request === null) {
    return; // input() and getpass(): JupyterLab's own prompt box
  }
  asked.delete(kernel);
  (stdin.parent ?? stdin).hide();
  void askPermission(request)
    .catch(reason => {
      console.error('jupyter-percent-agent: permission', reason);
      return '';
    })
    .then(value => {
      const future = area.future;
      if (future && !future.isDisposed) {
        future.sendInputReply({ status: 'ok', value }, msg.header);
      }
    });
}

/**
 * Show the Agent kernel's permission requests in `panel` as a dialog (any other input
 * request keeps JupyterLab's own prompt box), through public signals only: the kernel
 * connection's `anyMessage` and each code cell's `OutputArea.inputRequested`.
 */
export function askPermissionsInDialogs(panel: NotebookPanel): void {
  const watchKernel = (): void => {
    const kernel = panel.sessionContext.session?.kernel;
    if (kernel) {
      hearRequests(kernel);
    }
  };
  const watchCells = (): void => {
    if (panel.isDisposed) {
      return;
    }
    for (const cell of panel.content.widgets) {
      if (cell instanceof CodeCell && !watchedAreas.has(cell.outputArea)) {
        const area = cell.outputArea;
        watchedAreas.add(area);
        area.inputRequested.connect((_, stdin) =>
          onInputRequested(panel, area, stdin)
        );
      }
    }
  };
  panel.sessionContext.kernelChanged.connect(watchKernel);
  panel.sessionContext.ready.then(watchKernel).catch(() => undefined);
  watchKernel();
  watchCells();
  panel.model?.cells.changed.connect(
    () => void Promise.resolve().then(watchCells)
  );
}
