/**
 * "Set up a model": a dialog that stores a provider's API key and the default model in the
 * user's config directory (as `tce keys set` and `tce models default` do), through the
 * server's `/percent-agent/keys` (authenticated and XSRF-checked like the contents API).
 *
 * Opened by the command (Agent menu, command palette) and by the button a message cell shows
 * when its run failed for a missing key; after saving from that button the cell runs again.
 * The key never comes back from the server: the dialog only shows where a key comes from.
 * The next model call reads the stored key, so nothing needs restarting.
 */

import { Dialog, showDialog } from '@jupyterlab/apputils';
import { Cell } from '@jupyterlab/cells';
import { NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { PanelLayout, Widget } from '@lumino/widgets';

import { el } from './dom';
import { isMessageNotebook } from './notebook';
import { runCellModels } from './run';
import { requestServer } from './server';
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

interface IKeysState {
  providers: IProvider[];
  default_model: string;
}

interface ISetup {
  provider: string;
  key: string;
  default_model: string;
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
  private model: HTMLInputElement;

  constructor(
    state: IKeysState,
    preferred: string | null,
    problem: string | null
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
    this.key = el('input', 'jp-mod-styled jp-PercentAgent-setupKey');
    this.key.type = 'password';
    this.key.autocomplete = 'off';
    this.key.placeholder = t.__(
      'API key (stored in your config directory, never in a project)'
    );
    this.model = el('input', 'jp-mod-styled jp-PercentAgent-setupModel');
    this.model.value = state.default_model;
    this.node.append(
      this.label(t.__('Provider'), this.provider),
      this.label(t.__('API key'), this.key),
      this.label(t.__('Default model'), this.model),
      el(
        'p',
        'jp-PercentAgent-setupNote',
        t.__(
          'A key set in the environment (OPENAI_API_KEY...) wins over the stored one. ' +
            'Keys go only to their own provider, never to a server a file names.'
        )
      )
    );
  }

  private label(text: string, field: HTMLElement): HTMLElement {
    const label = el('label', 'jp-PercentAgent-setupField');
    label.append(el('span', '', text), field);
    return label;
  }

  getValue(): ISetup {
    return {
      provider: this.provider.value,
      key: this.key.value,
      default_model: this.model.value.trim()
    };
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
  const t = trans();
  for (;;) {
    const state = await requestKeys();
    const result = await showDialog<ISetup>({
      title: t.__('Set up a model'),
      body: new SetupBody(state, preferred, problem),
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
      await requestKeys(result.value);
      return true;
    } catch (err) {
      problem = t.__('Not saved: %1', (err as Error).message);
      preferred = result.value.provider;
    }
  }
}

/** The "Set up a model" button under each cell that has one. */
const buttons = new WeakMap<Cell, Widget>();

function dropButton(cell: Cell): void {
  buttons.get(cell)?.dispose();
  buttons.delete(cell);
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
  // a widget of the cell's own layout (public Lumino API), after its output: disposed with
  // the cell, never a node slipped into JupyterLab's DOM
  const widget = new Widget({ node: button });
  (cell.layout as PanelLayout).addWidget(widget);
  buttons.set(cell, widget);
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
