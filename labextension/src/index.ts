/**
 * jupyter-percent-agent: message files (`.msg.md`) open as notebooks.
 *
 * - the `agent-chat` file type, whose default viewer is the Notebook;
 * - "Open With > Notebook" for a plain `.md`, which still opens in the editor by default;
 * - the "New Agent Chat" command (Launcher, File > New, palette), the Launcher's one agent
 *   entry (the agent kernel's own notebook card is taken out);
 * - the renderer of replies, steps, tool calls, tool results and Jarvis display tags, all
 *   untrusted; message notebooks kept untrusted (`notebook.ts`);
 * - the bar over each message cell (agent, history, summary) and the status-bar total;
 * - "Set up a model" (Agent menu, palette, and a button under a cell that failed for a
 *   missing key): a provider's key and the default model, stored in the user's config;
 * - the `loadRemoteMedia` setting.
 */

import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import { ILauncher } from '@jupyterlab/launcher';
import { IMainMenu } from '@jupyterlab/mainmenu';
import {
  INotebookTracker,
  INotebookWidgetFactory,
  NotebookPanel,
  NotebookWidgetFactory
} from '@jupyterlab/notebook';
import { Contents } from '@jupyterlab/services';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStatusBar } from '@jupyterlab/statusbar';
import { markdownIcon } from '@jupyterlab/ui-components';
import { PartialJSONObject } from '@lumino/coreutils';
import { ISignal, Signal } from '@lumino/signaling';
import { Menu } from '@lumino/widgets';

import { decorateCells } from './cellbar';
import { agentChatIcon } from './icons';
import { sendLiveState } from './livestate';
import {
  guardNotebook,
  guardRenderers,
  isMessageNotebook,
  KERNEL_NAME,
  untrustNotebook
} from './notebook';
import { openSetup, SETUP_COMMAND, watchMissingKeys } from './setup';
import { watchTrustRefusals } from './trust';
import { highlightCodeCells } from './codecells';
import { watchProposals } from './proposals';
import { setLoadRemoteMedia } from './untrusted';
import { UsageStatus } from './usage';

export { agentChatIcon } from './icons';
export { outputKind } from './renderer';
export { extractJarvisTags } from './jarvis';
export { parseAttp } from './attp';
export { classifyUrl } from './untrusted';

const PLUGIN_ID = 'jupyter-percent-agent:plugin';

/** The file type of message files. */
export const FILE_TYPE = 'agent-chat';
export const EXTENSION = '.msg.md';
/** Script message files: a conversation kept in a script's comments. */
export const SCRIPT_FILE_TYPE = 'agent-chat-script';
export const SCRIPT_EXTENSIONS = ['.msg.py', '.msg.R', '.msg.r', '.msg.jl', '.msg.sh'];
/** JupyterLab's own notebook widget factory. */
const NOTEBOOK_FACTORY = 'Notebook';

namespace CommandIDs {
  export const newChat = 'percent-agent:new-chat';
}

/** The kernel of message files: its cells are messages to an agent. */
const KERNELSPEC = {
  name: KERNEL_NAME,
  display_name: 'Agent',
  language: 'markdown'
};

function emptyChat(): PartialJSONObject {
  return {
    cells: [],
    metadata: {
      kernelspec: { ...KERNELSPEC },
      language_info: { name: 'markdown' }
    },
    nbformat: 4,
    nbformat_minor: 5
  };
}

/**
 * Take the agent kernel's cards ("Agent" in Notebook, which makes an `.ipynb`, and in
 * Console, a chat saved nowhere) out of the Launcher: "New Agent Chat" is its one entry. JupyterLab adds kernel cards when
 * the kernelspecs load (and again when they change), so the list is filtered each time.
 * Needs JupyterLab's `LauncherModel` (its `itemsList`); any other launcher is left alone.
 */
function dropKernelCard(launcher: ILauncher): void {
  const model = launcher as unknown as {
    itemsList?: ILauncher.IItemOptions[];
    stateChanged?: ISignal<unknown, void>;
  };
  const items = model.itemsList;
  if (!Array.isArray(items) || typeof model.stateChanged?.connect !== 'function') {
    return;
  }
  const isKernelCard = (item: ILauncher.IItemOptions): boolean => {
    const args = item.args ?? {};
    const preference = args['kernelPreference'] as { name?: unknown } | undefined;
    return (
      (item.command === 'notebook:create-new' && args['kernelName'] === KERNEL_NAME) ||
      (item.command === 'console:create' && preference?.name === KERNEL_NAME)
    );
  };
  const filter = (): void => {
    for (let i = items.length - 1; i >= 0; i--) {
      if (isKernelCard(items[i])) {
        items.splice(i, 1);
      }
    }
  };
  filter();
  model.stateChanged.connect(filter);
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description:
    'Open agent conversations kept as Markdown message files (.msg.md) as notebooks',
  autoStart: true,
  // The notebook factory must exist before a file type can name it.
  requires: [INotebookWidgetFactory, INotebookTracker],
  optional: [
    ILauncher,
    IMainMenu,
    ICommandPalette,
    IDefaultFileBrowser,
    ISettingRegistry,
    IStatusBar
  ],
  activate: (
    app: JupyterFrontEnd,
    notebookFactory: NotebookWidgetFactory.IFactory,
    tracker: INotebookTracker,
    launcher: ILauncher | null,
    mainMenu: IMainMenu | null,
    palette: ICommandPalette | null,
    defaultBrowser: IDefaultFileBrowser | null,
    settings: ISettingRegistry | null,
    statusBar: IStatusBar | null
  ) => {
    const { docRegistry, commands, serviceManager } = app;

    // Message files: the Notebook is their first (default) factory; the pattern gives
    // the type precedence over `.md` types for the icon of a listed notebook model.
    docRegistry.addFileType(
      {
        name: FILE_TYPE,
        displayName: 'Agent Chat',
        extensions: [EXTENSION],
        pattern: '\\.msg\\.md$',
        mimeTypes: ['text/markdown'],
        contentType: 'notebook',
        fileFormat: 'json',
        icon: agentChatIcon
      },
      [NOTEBOOK_FACTORY]
    );

    // Script message files (`NAME.msg.py`, the same grammar behind `#` comments) open as
    // notebooks too; a plain `.py` keeps its editor.
    docRegistry.addFileType(
      {
        name: SCRIPT_FILE_TYPE,
        displayName: 'Agent Chat (script)',
        extensions: SCRIPT_EXTENSIONS,
        pattern: '\\.msg\\.(py|R|r|jl|sh)$',
        mimeTypes: ['text/x-python'],
        contentType: 'notebook',
        fileFormat: 'json',
        icon: agentChatIcon
      },
      [NOTEBOOK_FACTORY]
    );

    // A plain `.md` keeps its default viewer (the editor); this second `.md` type only
    // adds the Notebook to "Open With".
    docRegistry.addFileType(
      {
        name: 'markdown-notebook',
        displayName: 'Markdown Notebook',
        extensions: ['.md'],
        mimeTypes: ['text/markdown'],
        contentType: 'notebook',
        fileFormat: 'json',
        icon: markdownIcon
      },
      [NOTEBOOK_FACTORY]
    );

    // Message notebooks: untrusted cells, model renderers, the bar over each message.
    const usage = new UsageStatus();
    const usageChanged = new Signal<UsageStatus, void>(usage);
    const showUsage = (): void => {
      const panel = tracker.currentWidget;
      usage.model = panel && isMessageNotebook(panel) ? panel.model : null;
      usageChanged.emit();
    };
    watchMissingKeys();
    // Before the file is read: a message notebook's first outputs render as model output.
    notebookFactory.widgetCreated.connect((_, panel) => guardRenderers(panel));
    tracker.widgetAdded.connect((_, panel: NotebookPanel) => {
      guardNotebook(panel, () => {
        decorateCells(panel);
        sendLiveState(panel);
        watchProposals(panel);
        watchTrustRefusals(panel);
        highlightCodeCells(panel);
        if (panel === tracker.currentWidget) {
          showUsage();
        }
      });
    });
    tracker.currentChanged.connect(showUsage);
    commands.commandExecuted.connect((_, executed) => {
      if (executed.id === 'notebook:trust') {
        void executed.result.then(() => {
          tracker.forEach(untrustNotebook);
        });
      }
    });
    statusBar?.registerStatusItem(`${PLUGIN_ID}:usage`, {
      item: usage,
      align: 'left',
      rank: 5,
      isActive: () => usage.model !== null,
      activeStateChanged: usageChanged
    });

    if (settings) {
      const apply = (loaded: ISettingRegistry.ISettings): void => {
        setLoadRemoteMedia(loaded.get('loadRemoteMedia').composite === true);
      };
      void settings
        .load(PLUGIN_ID)
        .then(loaded => {
          apply(loaded);
          loaded.changed.connect(apply);
        })
        .catch(reason => console.error('jupyter-percent-agent: settings', reason));
    }

    commands.addCommand(CommandIDs.newChat, {
      label: args => (args['isMenu'] ? 'Agent Chat' : 'New Agent Chat'),
      caption: 'Create a new agent conversation (a .msg.md message file)',
      icon: args => (args['isPalette'] ? undefined : agentChatIcon),
      execute: async args => {
        const cwd =
          typeof args['cwd'] === 'string'
            ? args['cwd']
            : (defaultBrowser?.model.path ?? '');
        const contents = serviceManager.contents;
        const model: Contents.IModel = await contents.newUntitled({
          path: cwd,
          type: 'notebook',
          ext: EXTENSION
        });
        await contents.save(model.path, {
          type: 'notebook',
          format: 'json',
          content: emptyChat()
        });
        return commands.execute('docmanager:open', {
          path: model.path,
          factory: NOTEBOOK_FACTORY
        });
      }
    });

    // Its own section: cards in the Notebook section show kernel logos, not icons.
    if (launcher) {
      dropKernelCard(launcher);
    }
    launcher?.add({
      command: CommandIDs.newChat,
      category: 'Agent',
      rank: 0
    });
    mainMenu?.fileMenu.newMenu.addItem({
      command: CommandIDs.newChat,
      args: { isMenu: true },
      rank: 1
    });
    palette?.addItem({
      command: CommandIDs.newChat,
      category: 'Agent',
      args: { isPalette: true }
    });

    commands.addCommand(SETUP_COMMAND, {
      label: 'Set up a model',
      caption: "Store a provider's API key and choose the default model",
      execute: () => openSetup()
    });
    palette?.addItem({ command: SETUP_COMMAND, category: 'Agent' });
    if (mainMenu) {
      const agentMenu = new Menu({ commands });
      agentMenu.id = 'jp-mainmenu-percent-agent';
      agentMenu.title.label = 'Agent';
      agentMenu.addItem({ command: CommandIDs.newChat, args: { isMenu: true } });
      agentMenu.addItem({ command: SETUP_COMMAND });
      mainMenu.addMenu(agentMenu, true, { rank: 900 });
    }
  }
};

export default plugin;
