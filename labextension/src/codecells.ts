/**
 * `[code]` cells are highlighted as their language. The notebook's language is the agent
 * kernel's (`markdown`), and JupyterLab gives every code cell that mime type when the cell
 * is made and when the kernel's language info arrives; a `[code]` cell (metadata
 * `percent_agent.type == "code"`) gets its own language's back each time: its `lang`
 * (the fence's info string) when there is one, else Python.
 */

import { language } from '@codemirror/language';
import { EditorView } from '@codemirror/view';
import { Cell, ICellModel } from '@jupyterlab/cells';
import { CodeMirrorEditor } from '@jupyterlab/codemirror';
import { NotebookPanel } from '@jupyterlab/notebook';

const MIME: { [lang: string]: string } = {
  python: 'text/x-ipython',
  py: 'text/x-ipython',
  ipython: 'text/x-ipython',
  r: 'text/x-rsrc',
  julia: 'text/x-julia',
  bash: 'text/x-sh',
  sh: 'text/x-sh',
  shell: 'text/x-sh',
  javascript: 'text/javascript',
  js: 'text/javascript',
  typescript: 'text/typescript',
  sql: 'text/x-sql'
};

/** The editor mime type of a `[code]` cell in `language`. */
export function codeMimeType(language: string): string {
  const lang = language.toLowerCase();
  return MIME[lang] ?? `text/x-${lang}`;
}

/** The mime type a cell's editor should have, or null for a cell that is no `[code]` cell. */
function wanted(model: ICellModel): string | null {
  if (model.type !== 'code') {
    return null;
  }
  const ns = model.getMetadata('percent_agent') as
    { [key: string]: unknown } | undefined;
  if (!ns || ns['type'] !== 'code') {
    return null;
  }
  return codeMimeType(typeof ns['lang'] === 'string' ? ns['lang'] : 'python');
}

/**
 * The editor loads languages asynchronously and applies whichever load finishes last: the
 * notebook's Markdown, asked for first but loaded slowly, can land after the cell's own. When
 * a `[code]` cell's editor ends up in Markdown, ask for its language again (a few times at
 * most). JupyterLab's editor says neither which language it applied nor when; CodeMirror
 * does (its `language` facet), to a listener given through the editor's `injectExtension`.
 */
function watchEditor(cell: Cell): void {
  const editor = cell.editor;
  if (!(editor instanceof CodeMirrorEditor)) {
    return;
  }
  const model = cell.model;
  let retries = 3;
  const check = (view: EditorView): void => {
    const mime = wanted(model);
    if (
      mime !== null &&
      view.state.facet(language)?.name === 'markdown' &&
      retries > 0
    ) {
      retries -= 1;
      // not within CodeMirror's update: the mime type change reconfigures the editor
      void Promise.resolve().then(() => {
        model.mimeType = 'text/plain';
        model.mimeType = mime;
      });
    }
  };
  editor.injectExtension(
    EditorView.updateListener.of(update => {
      if (update.startState.facet(language) !== update.state.facet(language)) {
        check(update.view);
      }
    })
  );
  check(editor.editor);
}

/** Keep the `[code]` cells of `panel` highlighted as their language. */
export function highlightCodeCells(panel: NotebookPanel): void {
  const watched = new WeakSet<ICellModel>();
  const fix = (model: ICellModel): void => {
    const mime = wanted(model);
    if (mime !== null && model.mimeType !== mime) {
      model.mimeType = mime;
    }
  };
  const apply = (): void => {
    if (panel.isDisposed) {
      return;
    }
    for (const cell of panel.content.widgets) {
      const model = cell.model;
      if (!watched.has(model)) {
        watched.add(model);
        // after the editor has heard of JupyterLab's change, so that its last language
        // request is this cell's own
        model.mimeTypeChanged.connect(
          () => void Promise.resolve().then(() => fix(model))
        );
        void cell.ready.then(() => watchEditor(cell));
      }
      fix(model);
    }
  };
  // after JupyterLab's own handlers of the same signals have set the notebook's mime type
  const later = (): void => void Promise.resolve().then(apply);
  void panel.context.ready.then(() => {
    apply();
    panel.model?.cells.changed.connect(later);
    panel.model?.metadataChanged.connect(later);
  });
  panel.sessionContext.kernelChanged.connect(later);
  panel.sessionContext.ready.then(later).catch(() => undefined);
}
