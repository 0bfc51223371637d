/**
 * One wrapper of a notebook's kernel connection `requestExecute`, shared by the parts that
 * need to see a cell's execute request or its reply (the live state it carries, the code a
 * reply proposes). JupyterLab has no hook for either, so the connection is wrapped: once per
 * connection, whatever number of parts ask, and again for each new kernel of the panel.
 */

import { NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';

type Metadata = KernelMessage.IExecuteRequestMsg['metadata'] | undefined;

/** What a part does with a cell's execute request and with its reply. */
export interface IExecuteHook {
  /** The request's metadata, changed or as it came. */
  request?(metadata: Metadata): Metadata;
  /** The reply, when it comes, and the metadata its request was sent with (not called for
   * a request that fails). */
  reply?(reply: KernelMessage.IExecuteReplyMsg, request: Metadata): void;
}

const hooks = new WeakMap<NotebookPanel, IExecuteHook[]>();
const wrapped = new WeakSet<Kernel.IKernelConnection>();

/** Run `hook` on every execute request `panel`'s kernel gets from now on. */
export function addExecuteHook(panel: NotebookPanel, hook: IExecuteHook): void {
  const known = hooks.get(panel);
  if (known) {
    known.push(hook);
    return;
  }
  const list = [hook];
  hooks.set(panel, list);
  const wrap = (): void => {
    const kernel = panel.sessionContext.session?.kernel;
    if (!kernel || wrapped.has(kernel)) {
      return;
    }
    wrapped.add(kernel);
    const original = kernel.requestExecute.bind(kernel);
    kernel.requestExecute = (content, disposeOnDone, metadata) => {
      let sent: Metadata = metadata;
      for (const h of list) {
        sent = h.request ? h.request(sent) : sent;
      }
      const future = original(content, disposeOnDone, sent);
      const onReply = list.filter(h => h.reply);
      if (onReply.length) {
        void future.done
          .then((reply: KernelMessage.IExecuteReplyMsg) => {
            for (const h of onReply) {
              h.reply?.(reply, sent);
            }
          })
          .catch(() => undefined);
      }
      return future;
    };
  };
  panel.sessionContext.kernelChanged.connect(wrap);
  panel.sessionContext.ready.then(wrap).catch(() => undefined);
  wrap();
}
