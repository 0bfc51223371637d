/**
 * The agents a message file defines, and a cell's history mode, read from the notebook as
 * the format core maps the file (docs/format.md): the front matter is the first raw cell
 * (`---` YAML `---`), with presets under `agents:` and the file's `default_agent`; agent
 * definition cells carry `definition: "agent"` and `name` in their metadata.
 *
 * A small reader of the YAML that matters here (top-level keys, the names under
 * `agents:` as a block mapping, a block list of `- name: ...` or a flow mapping); the
 * kernel reads the whole file with a real YAML parser, this only fills a menu.
 */

export interface IFileAgents {
  /** Agent names, in the order the file defines them (presets, then definition cells). */
  names: string[];
  /** `default_agent` of the front matter, or the first preset: who answers by default. */
  defaultAgent: string | null;
  /** The front matter's `history:` (`auto`), the mode of cells that set none. */
  history?: HistoryMode;
}

/** The minimal view of a cell this module reads. */
export interface ICellView {
  type: string;
  source: string;
  metadata: { [key: string]: unknown };
}

const FRONT_MATTER = /^---[ \t]*\n([\s\S]*?)\n(?:---|\.\.\.)[ \t]*(?:\n|$)/;

function unquote(text: string): string {
  const t = text.trim();
  if (
    t.length >= 2 &&
    (t[0] === '"' || t[0] === "'") &&
    t[t.length - 1] === t[0]
  ) {
    return t.slice(1, -1);
  }
  return t;
}

/** The names of the `agents:` presets and `default_agent` in front-matter YAML. */
export function frontMatterAgents(yaml: string): IFileAgents {
  const lines = yaml.split('\n');
  const names: string[] = [];
  let defaultAgent: string | null = null;
  let history: HistoryMode = 'include';
  for (let i = 0; i < lines.length; i++) {
    const top = /^([A-Za-z_][\w-]*)[ \t]*:[ \t]*(.*?)[ \t]*(?:#.*)?$/.exec(
      lines[i]
    );
    if (!top) {
      continue;
    }
    const [, key, rest] = top;
    if (key === 'history' && rest) {
      history = historyMode(unquote(rest)) === 'auto' ? 'auto' : 'include';
    } else if (key === 'default_agent' && rest) {
      defaultAgent = unquote(rest);
    } else if (key === 'agents') {
      if (rest.startsWith('{')) {
        names.push(...flowKeys(rest));
        continue;
      }
      let indent = -1;
      for (let j = i + 1; j < lines.length; j++) {
        const line = lines[j];
        if (!line.trim() || /^\s*#/.test(line)) {
          continue;
        }
        const depth = line.length - line.replace(/^\s+/, '').length;
        if (depth === 0) {
          break;
        }
        if (indent < 0) {
          indent = depth;
        }
        if (depth !== indent) {
          continue;
        }
        const item = /^\s*-\s+name[ \t]*:[ \t]*(.+?)[ \t]*$/.exec(line);
        const key = /^\s*("[^"]+"|'[^']+'|[^\s:#-][^:#]*?)[ \t]*:(?:\s|$)/.exec(
          line
        );
        if (item) {
          names.push(unquote(item[1]));
        } else if (key) {
          names.push(unquote(key[1]));
        }
      }
    }
  }
  return { names, defaultAgent: defaultAgent ?? names[0] ?? null, history };
}

/** The top-level keys of a one-line flow mapping (`{a: {...}, b: {...}}`). */
function flowKeys(text: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  let token = '';
  for (const ch of text) {
    if (ch === '{' || ch === '[') {
      depth += 1;
      if (depth === 1) {
        token = '';
        continue;
      }
    } else if (ch === '}' || ch === ']') {
      depth -= 1;
    } else if (depth === 1 && ch === ':' && token.trim()) {
      keys.push(unquote(token));
      token = '';
      continue;
    } else if (depth === 1 && ch === ',') {
      token = '';
      continue;
    }
    if (depth === 1) {
      token += ch;
    } else if (depth > 1) {
      token = '';
    }
  }
  return keys;
}

/** Every agent a notebook's cells define, and the file's default. */
export function fileAgents(cells: Iterable<ICellView>): IFileAgents {
  const names: string[] = [];
  let defaultAgent: string | null = null;
  let history: HistoryMode = 'include';
  let first = true;
  for (const cell of cells) {
    if (first && cell.type === 'raw') {
      const match = FRONT_MATTER.exec(cell.source);
      if (match) {
        const found = frontMatterAgents(match[1]);
        names.push(...found.names);
        defaultAgent = found.defaultAgent;
        history = found.history ?? 'include';
      }
    }
    first = false;
    if (
      cell.metadata['definition'] === 'agent' &&
      typeof cell.metadata['name'] === 'string'
    ) {
      names.push(cell.metadata['name']);
    }
  }
  return { names: Array.from(new Set(names)), defaultAgent, history };
}

export type HistoryMode = 'include' | 'auto' | 'exclude' | 'summary';

/** A cell's `history` attribute as the runtime reads it (message cells: the file's
 * `history:` by default, else include). */
export function historyMode(
  value: unknown,
  fileDefault: HistoryMode = 'include'
): HistoryMode {
  if (value === undefined || value === null || value === '') {
    return fileDefault;
  }
  if (typeof value === 'boolean') {
    return value ? 'include' : 'exclude';
  }
  const t = String(value).trim().toLowerCase();
  if (['none', 'exclude', '0', 'false', 'no'].includes(t)) {
    return 'exclude';
  }
  return t === 'summary' ? 'summary' : t === 'auto' ? 'auto' : 'include';
}
