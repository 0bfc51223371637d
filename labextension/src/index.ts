/**
 * jupyter-percent-agent: message files (`.msg.md`) open as notebooks. The plugins, by job:
 *
 * - `file-types` (`filetypes.ts`): the `agent-chat` file types, whose default viewer is
 *   the Notebook; "Open With > Notebook" for a plain `.md`;
 * - `message-notebooks` (`messagenotebooks.ts`): what each message notebook gets (untrusted
 *   model output rendered by its own renderers, the bar over each message, the live state,
 *   proposals, "Trust this folder?"), as a widget extension; provides `IMessageNotebooks`;
 * - `commands`: "New Agent Chat" (Launcher, File > New, palette; the agent kernel's own
 *   Launcher cards taken out), "Set up a model" (Agent menu, palette) and "Fork from here"
 *   (a message notebook cell's context menu, `fork.ts`); the menus are declared in
 *   `schema/commands.json`;
 * - `usage-status`: the open conversation's running total in the status bar;
 * - `plugin`: the settings (`loadRemoteMedia`, `schema/plugin.json`).
 */

import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import { ILauncher } from '@jupyterlab/launcher';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Contents } from '@jupyterlab/services';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStatusBar } from '@jupyterlab/statusbar';
import { ITranslator } from '@jupyterlab/translation';
import { PartialJSONObject } from '@lumino/coreutils';
import { ISignal, Signal } from '@lumino/signaling';

import { EXTENSION, fileTypesPlugin, NOTEBOOK_FACTORY } from './filetypes';
import { FORK_COMMAND, forkFromHere } from './fork';
import { agentChatIcon } from './icons';
import { IMessageNotebooks, messageNotebooksPlugin } from './messagenotebooks';
import { isMessageNotebook, KERNEL_NAME } from './notebook';
import { openSetup, SETUP_COMMAND } from './setup';
import { setTranslator, trans } from './translation';
import { setLoadRemoteMedia } from './untrusted';
import { UsageStatus } from './usage';

export { agentChatIcon } from './icons';
export { outputKind } from './renderer';
export { extractJarvisTags } from './jarvistags';
export { parseAttp } from './attp';
export { classifyUrl } from './untrusted';
export {
  FILE_TYPE,
  EXTENSION,
  SCRIPT_FILE_TYPE,
  SCRIPT_EXTENSIONS
} from './filetypes';
export { IMessageNotebooks } from './messagenotebooks';

/** The plugin whose settings (`schema/plugin.json`) users have saved: its id stays. */
const SETTINGS_PLUGIN_ID = 'jupyter-percent-agent:plugin';

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
 * Console, a chat saved nowhere) out of the Launcher: "New Agent Chat" is its one entry.
 * JupyterLab adds kernel cards when the kernelspecs load (and again when they change), so
 * the list is filtered each time. JupyterLab has no public way to leave a kernel's card out
 * (docs/jupyterlab.md): this needs its `LauncherModel` (its `itemsList`); any other
 * launcher is left alone.
 */
function dropKernelCard(launcher: ILauncher): void {
  const model = launcher as unknown as {
    itemsList?: ILauncher.IItemOptions[];
    stateChanged?: ISignal<unknown, void>;
  };
  const items = model.itemsList;
  if (
    !Array.isArray(items) ||
    typeof model.stateChanged?.connect !== 'function'
  ) {
    return;
  }
  const isKernelCard = (item: ILauncher.IItemOptions): boolean => {
    const args = item.args ?? {};
    const preference = args['kernelPreference'] as
      { name?: unknown } | undefined;
    return (
      (item.command === 'notebook:create-new' &&
        args['kernelName'] === KERNEL_NAME) ||
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

const commandsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-percent-agent:commands',
  description:
    '"New Agent Chat" and "Set up a model": Launcher, menus, palette',
  autoStart: true,
  requires: [],
  optional: [
    ILauncher,
    ICommandPalette,
    IDefaultFileBrowser,
    ITranslator,
    INotebookTracker
  ],
  activate: (
    app: JupyterFrontEnd,
    launcher: ILauncher | null,
    palette: ICommandPalette | null,
    defaultBrowser: IDefaultFileBrowser | null,
    translator: ITranslator | null,
    tracker: INotebookTracker | null
  ) => {
    setTranslator(translator);
    const t = trans();
    const { commands, serviceManager } = app;
    commands.addCommand(CommandIDs.newChat, {
      label: args =>
        args['isMenu'] ? t.__('Agent Chat') : t.__('New Agent Chat'),
      caption: t.__('Create a new agent conversation (a .msg.md message file)'),
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
    commands.addCommand(SETUP_COMMAND, {
      label: t.__('Set up a model'),
      caption: t.__("Store a provider's API key and choose the default model"),
      execute: () => openSetup()
    });
    const forkable = (): NotebookPanel | null => {
      const panel = tracker?.currentWidget ?? null;
      return panel !== null &&
        isMessageNotebook(panel) &&
        panel.content.activeCell !== null
        ? panel
        : null;
    };
    commands.addCommand(FORK_COMMAND, {
      label: t.__('Fork from here'),
      caption: t.__(
        'Copy the conversation up to this cell, with its outputs, into a new file and open it'
      ),
      isVisible: () => forkable() !== null,
      execute: async () => {
        const panel = forkable();
        if (panel === null) {
          return null;
        }
        return forkFromHere(panel, path =>
          commands.execute('docmanager:open', {
            path,
            factory: NOTEBOOK_FACTORY
          })
        );
      }
    });
    // Its own section: cards in the Notebook section show kernel logos, not icons.
    if (launcher) {
      dropKernelCard(launcher);
      launcher.add({
        command: CommandIDs.newChat,
        category: t.__('Agent'),
        rank: 0
      });
    }
    palette?.addItem({
      command: CommandIDs.newChat,
      category: t.__('Agent'),
      args: { isPalette: true }
    });
    palette?.addItem({ command: SETUP_COMMAND, category: t.__('Agent') });
  }
};

const usageStatusPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-percent-agent:usage-status',
  description:
    "The open conversation's running total of tokens and cost, in the status bar",
  autoStart: true,
  requires: [INotebookTracker, IMessageNotebooks],
  optional: [IStatusBar],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    messageNotebooks: IMessageNotebooks,
    statusBar: IStatusBar | null
  ) => {
    if (statusBar === null) {
      return;
    }
    const usage = new UsageStatus();
    const usageChanged = new Signal<UsageStatus, void>(usage);
    const showUsage = (): void => {
      const panel = tracker.currentWidget;
      usage.model = panel && isMessageNotebook(panel) ? panel.model : null;
      usageChanged.emit();
    };
    tracker.currentChanged.connect(showUsage);
    messageNotebooks.found.connect((_, panel) => {
      if (panel === tracker.currentWidget) {
        showUsage();
      }
    });
    statusBar.registerStatusItem('jupyter-percent-agent:usage', {
      item: usage,
      align: 'left',
      rank: 5,
      isActive: () => usage.model !== null,
      activeStateChanged: usageChanged
    });
  }
};

const settingsPlugin: JupyterFrontEndPlugin<void> = {
  id: SETTINGS_PLUGIN_ID,
  description:
    'The settings of message notebooks: load remote media in replies',
  autoStart: true,
  requires: [ISettingRegistry],
  activate: (app: JupyterFrontEnd, settings: ISettingRegistry) => {
    const apply = (loaded: ISettingRegistry.ISettings): void => {
      setLoadRemoteMedia(loaded.get('loadRemoteMedia').composite === true);
    };
    void settings
      .load(SETTINGS_PLUGIN_ID)
      .then(loaded => {
        apply(loaded);
        loaded.changed.connect(apply);
      })
      .catch(reason =>
        console.error('jupyter-percent-agent: settings', reason)
      );
  }
};

export default [
  fileTypesPlugin,
  messageNotebooksPlugin,
  commandsPlugin,
  usageStatusPlugin,
  settingsPlugin
];
