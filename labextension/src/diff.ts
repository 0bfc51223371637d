/**
 * Diffs shown as diffs: the unified diff of an edit an external (ACP) agent makes, in its
 * tool call's output and in the permission dialog that asks before it.
 *
 * The text is the model's (or the agent's) and never trusted: each line goes in as text
 * (`textContent`), in a span whose class says what the line is, so nothing in it can become
 * markup; no HTML is parsed.
 */

import { el } from './dom';

export type DiffLineKind = 'add' | 'del' | 'hunk' | 'file' | 'context';

export interface IDiffLine {
  kind: DiffLineKind;
  text: string;
}

/** What each line of a unified diff is. */
export function diffLines(diff: string): IDiffLine[] {
  const lines = diff.replace(/\n$/, '').split('\n');
  return lines.map(text => {
    let kind: DiffLineKind = 'context';
    if (text.startsWith('+++ ') || text.startsWith('--- ')) {
      kind = 'file';
    } else if (text.startsWith('@@')) {
      kind = 'hunk';
    } else if (text.startsWith('+')) {
      kind = 'add';
    } else if (text.startsWith('-')) {
      kind = 'del';
    }
    return { kind, text };
  });
}

/** Where the first unified diff in a text starts (a `---`/`+++` header, then a hunk), or
 * -1 when it holds none. */
export function diffStart(text: string): number {
  return text.search(/^--- .*\n\+\+\+ .*\n@@ /m);
}

const CLASSES: { [kind in DiffLineKind]: string } = {
  add: 'jp-PercentAgent-diffAdd',
  del: 'jp-PercentAgent-diffDel',
  hunk: 'jp-PercentAgent-diffHunk',
  file: 'jp-PercentAgent-diffFile',
  context: 'jp-PercentAgent-diffContext'
};

/** A unified diff as a block of lines, each marked added, removed, hunk or file. */
export function renderDiff(diff: string): HTMLElement {
  const block = el('pre', 'jp-PercentAgent-diff');
  for (const line of diffLines(diff)) {
    block.appendChild(el('span', CLASSES[line.kind], line.text + '\n'));
  }
  return block;
}

/**
 * Show every diff code block under `host` (Markdown's ```` ```diff ```` fences, which
 * JupyterLab renders as `code.language-diff`) as a diff.
 */
export function showDiffBlocks(host: HTMLElement): void {
  host.querySelectorAll('pre > code.language-diff').forEach(code => {
    const pre = code.parentElement as HTMLElement;
    pre.replaceWith(renderDiff(code.textContent ?? ''));
  });
}
