/**
 * jupyter-percent-agent: message files (`.msg.md`) open as notebooks.
 *
 * - the `agent-chat` file type, whose default viewer is the Notebook;
 * - "Open With > Notebook" for a plain `.md`, which still opens in the editor by default;
 * - the "New Agent Chat" command (Launcher, File > New, palette);
 * - the renderer of replies, tool calls, tool results and Jarvis display tags.
 */

import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import { ILauncher } from '@jupyterlab/launcher';
import { IMainMenu } from '@jupyterlab/mainmenu';
import { INotebookWidgetFactory } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { Contents } from '@jupyterlab/services';
import { markdownIcon } from '@jupyterlab/ui-components';
import { PartialJSONObject } from '@lumino/coreutils';

import { agentChatIcon } from './icons';
import { agentMarkdownFactory, agentTextFactory } from './renderer';

export { agentChatIcon } from './icons';
export { outputKind } from './renderer';
export { extractJarvisTags } from './jarvis';

/** The file type of message files. */
export const FILE_TYPE = 'agent-chat';
export const EXTENSION = '.msg.md';
/** JupyterLab's own notebook widget factory. */
const NOTEBOOK_FACTORY = 'Notebook';

namespace CommandIDs {
  export const newChat = 'percent-agent:new-chat';
}

/** The kernel of message files: its cells are messages to an agent. */
const KERNELSPEC = {
  name: 'percent-agent',
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

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-percent-agent:plugin',
  description:
    'Open agent conversations kept as Markdown message files (.msg.md) as notebooks',
  autoStart: true,
  // The notebook factory must exist before a file type can name it.
  requires: [INotebookWidgetFactory, IRenderMimeRegistry],
  optional: [ILauncher, IMainMenu, ICommandPalette, IDefaultFileBrowser],
  activate: (
    app: JupyterFrontEnd,
    _notebookFactory: unknown,
    rendermime: IRenderMimeRegistry,
    launcher: ILauncher | null,
    mainMenu: IMainMenu | null,
    palette: ICommandPalette | null,
    defaultBrowser: IDefaultFileBrowser | null
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

    // Before any notebook clones the registry.
    rendermime.addFactory(agentMarkdownFactory, agentMarkdownFactory.defaultRank);
    rendermime.addFactory(agentTextFactory, agentTextFactory.defaultRank);

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
  }
};

export default plugin;
