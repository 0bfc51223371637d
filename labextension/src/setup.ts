/**
 * "Set up a model": a dialog that stores a provider's API key and the default model in the
 * user's config directory (as `tce keys set` and `tce models default` do), or the user's own
 * OpenAI-compatible server (Ollama, vLLM, a LiteLLM proxy: its URL, an optional key tied to
 * exactly that URL, as `tce keys server` does), through the server's `/percent-agent/keys`
 * (authenticated and XSRF-checked like the contents API). The server checks that the URL
 * answers with its model list before storing anything.
 *
 * Opened by the command (Agent menu, command palette) and by the button a message cell shows
 * when its run failed for a missing key; after saving from that button the cell runs again.
 * The key never comes back from the server: the dialog only shows where a key comes from.
 * The next model call reads the stored key, so nothing needs restarting.
 */

import { Dialog, Notification, showDialog } from '@jupyterlab/apputils';
import { Cell } from '@jupyterlab/cells';
import { NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { Widget } from '@lumino/widgets';

import { el } from './dom';
import { isMessageNotebook } from './notebook';
import { runCellModels } from './run';
import { requestServer } from './server';
import { ISetup, OWN_SERVER, setupRequest } from './setuprequest';
import { trans } from './translation';

export const SETUP_COMMAND = 'percent-agent:setup-model';
const ROUTE = 'percent-agent/keys';
/** How the runtime words a failure for a missing key (runtime/models.py, `explain`). */
const MISSING_KEY = /^no API key found for .*: run tce keys set ([\w.-]+) /;
const BUTTON_CLASS = 'jp-PercentAgent-setupButton';

interface IProvider {
  name: string;
  /** Where its key comes from ("environment (...)", "config (...)"), or null: none. */
  source: string | null;
}

/** The user's own server: its URL (no credentials), where it is set, whether it has a key. */
interface IServer {
  url: string;
  source: 'config' | 'environment';
  has_key: boolean;
}

interface IKeysState {
  providers: IProvider[];
  server: IServer | null;
  default_model: string;
  /** After saving a server: the plain-http warning, if any. */
  warning?: string | null;
}

function requestKeys(body?: ISetup): Promise<IKeysState> {
  return requestServer<IKeysState>(
    ROUTE,
    body ? { method: 'POST', body: JSON.stringify(body) } : { method: 'GET' }
  );
}

/** The dialog's body: a provider, a password field for its key, the default model. */
class SetupBody extends Widget implements Dialog.IBodyWidget<ISetup> {
  private provider: HTMLSelectElement;
  private key: HTMLInputElement;
  private url: HTMLInputElement;
  private urlField: HTMLElement;
  private model: HTMLInputElement;

  constructor(
    state: IKeysState,
    preferred: string | null,
    problem: string | null,
    typed: ISetup | null
  ) {
    super({ node: el('div', 'jp-PercentAgent-setupDialog') });
    const t = trans();
    if (problem) {
      this.node.appendChild(el('p', 'jp-PercentAgent-setupProblem', problem));
    }
    this.provider = el('select', 'jp-mod-styled jp-PercentAgent-setupProvider');
    for (const { name, source } of state.providers) {
      const option = el(
        'option',
        '',
        source ? t.__('%1 (key from %2)', name, source) : name
      );
      option.value = name;
      option.selected = name === preferred;
      this.provider.appendChild(option);
    }
    const own = el(
      'option',
      '',
      t.__('Your own server (Ollama, vLLM, a LiteLLM proxy...)')
    );
    own.value = OWN_SERVER;
    own.selected =
      preferred === OWN_SERVER ||
      (preferred === null && state.server?.source === 'config');
    this.provider.appendChild(own);
    this.url = el('input', 'jp-mod-styled jp-PercentAgent-setupUrl');
    this.url.type = 'url';
    this.url.placeholder = 'http://localhost:11434/v1';
    this.url.value = typed?.server ?? state.server?.url ?? '';
    this.urlField = this.label(
      t.__('Server URL (OpenAI-compatible, e.g. .../v1)'),
      this.url
    );
    this.key = el('input', 'jp-mod-styled jp-PercentAgent-setupKey');
    this.key.type = 'password';
    this.key.autocomplete = 'off';
    this.model = el('input', 'jp-mod-styled jp-PercentAgent-setupModel');
    this.model.value = typed?.default_model || state.default_model;
    const note = el('p', 'jp-PercentAgent-setupNote');
    const show = (): void => {
      const server = this.provider.value === OWN_SERVER;
      this.urlField.hidden = !server;
      this.key.placeholder = server
        ? state.server?.has_key
          ? t.__('Empty: keep the key stored for this URL')
          : t.__('Optional: the key goes to this exact URL only')
        : t.__('API key (stored in your config directory, never in a project)');
      note.textContent = server
        ? t.__(
            'Every model no file sends elsewhere goes to this server, by the name it ' +
              'gives (or openai/NAME). Its key is stored with your keys, tied to exactly ' +
              'this URL, and goes to no other. PERCENT_AGENT_API_BASE, when set, wins.'
          )
        : t.__(
            'A key set in the environment (OPENAI_API_KEY...) wins over the stored one. ' +
              'Keys go only to their own provider, never to a server a file names.'
          );
    };
    this.provider.addEventListener('change', show);
    show();
    this.node.append(
      this.label(t.__('Provider'), this.provider),
      this.urlField,
      this.label(t.__('API key'), this.key),
      this.label(t.__('Default model'), this.model),
      note
    );
  }

  private label(text: string, field: HTMLElement): HTMLElement {
    const label = el('label', 'jp-PercentAgent-setupField');
    label.append(el('span', '', text), field);
    return label;
  }

  getValue(): ISetup {
    return setupRequest(
      this.provider.value,
      this.key.value,
      this.url.value,
      this.model.value.trim()
    );
  }
}

/**
 * Open the dialog (`preferred`: the provider to select). True when something was saved;
 * a refusal from the server (a key with spaces...) opens the dialog again, saying why.
 */
export async function openSetup(
  preferred: string | null = null
): Promise<boolean> {
  let problem: string | null = null;
  let typed: ISetup | null = null; // what a refused save had: shown again, but no key
  const t = trans();
  for (;;) {
    const state = await requestKeys();
    const result: Dialog.IResult<ISetup> = await showDialog<ISetup>({
      title: t.__('Set up a model'),
      body: new SetupBody(state, preferred, problem, typed),
      buttons: [
        Dialog.cancelButton({ label: t.__('Cancel') }),
        Dialog.okButton({ label: t.__('Save') })
      ],
      focusNodeSelector: '.jp-PercentAgent-setupKey'
    });
    if (!result.button.accept || result.value === null) {
      return false;
    }
    try {
      const saved = await requestKeys(result.value);
      if (saved.warning) {
        Notification.warning(saved.warning, { autoClose: false });
      }
      return true;
    } catch (err) {
      problem = t.__('Not saved: %1', (err as Error).message);
      typed = result.value;
      preferred =
        result.value.server !== undefined
          ? OWN_SERVER
          : (result.value.provider ?? null);
    }
  }
}

function dropButton(cell: Cell): void {
  cell.node.querySelectorAll(`.${BUTTON_CLASS}`).forEach(node => node.remove());
}

/** Under a cell whose run failed for a missing key: a button that opens the dialog. */
function offerSetup(panel: NotebookPanel, cell: Cell, provider: string): void {
  dropButton(cell);
  const t = trans();
  const button = el(
    'button',
    `jp-mod-styled jp-mod-accept ${BUTTON_CLASS}`,
    t.__('Set up a model')
  );
  button.title = t.__(
    'Store an API key for %1, then run this cell again',
    provider
  );
  button.addEventListener('click', () => {
    void openSetup(provider).then(async saved => {
      if (!saved || cell.isDisposed) {
        return;
      }
      dropButton(cell);
      await runCellModels(panel, [cell.model]);
    });
  });
  cell.node.appendChild(button);
}

/** Watch every run of a message cell for a missing key (once per application). */
export function watchMissingKeys(): void {
  NotebookActions.executionScheduled.connect((_, { cell }) => dropButton(cell));
  NotebookActions.executed.connect((_, { notebook, cell, success, error }) => {
    const missing = success ? null : MISSING_KEY.exec(error?.errorValue ?? '');
    const panel = notebook.parent;
    if (
      !missing ||
      !(panel instanceof NotebookPanel) ||
      !isMessageNotebook(panel)
    ) {
      return;
    }
    offerSetup(panel, cell, missing[1]);
  });
}
