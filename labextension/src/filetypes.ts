/**
 * The file types of message files: `.msg.md` (and the script message files `.msg.py`,
 * `.msg.R`, ...) open as notebooks on double-click; a plain `.md` keeps its editor, with the
 * Notebook as a second choice under "Open With".
 */

import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { INotebookWidgetFactory } from '@jupyterlab/notebook';
import { ITranslator } from '@jupyterlab/translation';
import { markdownIcon } from '@jupyterlab/ui-components';

import { agentChatIcon } from './icons';
import { setTranslator, trans } from './translation';

/** The file type of message files. */
export const FILE_TYPE = 'agent-chat';
export const EXTENSION = '.msg.md';
/** Script message files: a conversation kept in a script's comments. */
export const SCRIPT_FILE_TYPE = 'agent-chat-script';
export const SCRIPT_EXTENSIONS = [
  '.msg.py',
  '.msg.R',
  '.msg.r',
  '.msg.jl',
  '.msg.sh'
];
/** Whether a file at `path` is a message file (or a Markdown file, which may be opened as
 * a notebook): a notebook of it is a conversation. */
export function isMessagePath(path: string): boolean {
  const lower = path.toLowerCase();
  return (
    lower.endsWith('.md') ||
    SCRIPT_EXTENSIONS.some(ext => lower.endsWith(ext.toLowerCase()))
  );
}
/** JupyterLab's own notebook widget factory. */
export const NOTEBOOK_FACTORY = 'Notebook';

export const fileTypesPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-percent-agent:file-types',
  description: 'Message files (.msg.md, .msg.py, ...) open as notebooks',
  autoStart: true,
  // The notebook factory must exist before a file type can name it.
  requires: [INotebookWidgetFactory],
  optional: [ITranslator],
  activate: (
    app: JupyterFrontEnd,
    _factory: unknown,
    translator: ITranslator | null
  ) => {
    setTranslator(translator);
    const t = trans();
    const { docRegistry } = app;
    // Message files: the Notebook is their first (default) factory; the pattern gives
    // the type precedence over `.md` types for the icon of a listed notebook model.
    docRegistry.addFileType(
      {
        name: FILE_TYPE,
        displayName: t.__('Agent Chat'),
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
        displayName: t.__('Agent Chat (script)'),
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
        displayName: t.__('Markdown Notebook'),
        extensions: ['.md'],
        mimeTypes: ['text/markdown'],
        contentType: 'notebook',
        fileFormat: 'json',
        icon: markdownIcon
      },
      [NOTEBOOK_FACTORY]
    );
  }
};
