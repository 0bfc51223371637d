/**
 * ATTP replies (docs/attp.md) read well enough to show them: the TOML a model writes for
 * a step (`thought`, then a `[tool_call]` table with `status`, `target` and `code`) or an
 * answer (`thought`, `answer`).
 *
 * A small reader of the TOML subset ATTP uses: `key = value` lines, `[table]` headers,
 * `"""..."""`, `'''...'''`, `"..."` and `'...'` strings, comments; any other value is kept as
 * its raw text. A string still open at the end of the text is taken as it stands (a reply
 * still streaming in), and the result says so. Anything else it cannot read gives `null`,
 * and the caller shows the text as it is.
 */

export interface IToolCallStep {
  status: string;
  target: string;
  code: string;
  /** Why the agent cannot (`status = "fail"`). */
  message: string;
}

export interface IAttpReply {
  /** Text before (and after) the TOML: prose a model wrote around it. */
  prose: string;
  thought: string;
  answer: string | null;
  toolCall: IToolCallStep | null;
  /** False while a string is still open: the reply is still streaming in. */
  complete: boolean;
}

type Table = { [key: string]: string };

/** Where a TOML reply starts: the first `thought =`, `answer =` or `[tool_call]` line. */
const TOML_START =
  /^[ \t]*(?:(?:thought|answer)[ \t]*=|\[[ \t]*tool_call[ \t]*\])/m;
const FENCE = /^[ \t]*(```|~~~)[ \t]*toml[ \t]*$/im;

/** Whether `text` reads as an ATTP reply (its TOML starts it, or a ```toml block does). */
export function looksLikeAttp(text: string): boolean {
  const start = text.replace(/^\s+/, '');
  return (
    TOML_START.test(start.split('\n', 1)[0]) ||
    /^(```|~~~)[ \t]*toml/i.test(start)
  );
}

/**
 * The ATTP reply in `text`, or `null` when it holds none that this reader can read. A reply
 * still `streaming` in may stop mid-line (`[tool_`): it is then read up to its last line.
 */
export function parseAttp(text: string, streaming = false): IAttpReply | null {
  const whole = parseWhole(text);
  if (!streaming) {
    // A finished reply with a string left open is not valid TOML.
    return whole?.complete ? whole : null;
  }
  if (whole !== null) {
    return whole;
  }
  const cut = text.lastIndexOf('\n');
  const head = cut > 0 ? parseWhole(text.slice(0, cut)) : null;
  return head && { ...head, complete: false };
}

function parseWhole(text: string): IAttpReply | null {
  text = text.replace(/\r\n/g, '\n');
  let prose = '';
  let toml = text;
  const fence = FENCE.exec(text);
  if (fence) {
    const bodyStart = fence.index + fence[0].length + 1;
    const closing = new RegExp(`^[ \\t]*${fence[1]}[ \\t]*$`, 'm');
    const rest = text.slice(bodyStart);
    const close = closing.exec(rest);
    toml = close ? rest.slice(0, close.index) : rest;
    prose = [
      text.slice(0, fence.index),
      close ? rest.slice(close.index + close[0].length) : ''
    ]
      .map(part => part.trim())
      .filter(part => part)
      .join('\n\n');
  } else {
    const start = TOML_START.exec(text);
    if (start === null) {
      return null;
    }
    prose = text.slice(0, start.index).trim();
    toml = text.slice(start.index);
  }
  const doc = readToml(toml);
  if (doc === null) {
    return null;
  }
  const root = doc.tables[''] ?? {};
  const call = doc.tables['tool_call'];
  if (root['thought'] === undefined && root['answer'] === undefined && !call) {
    return null;
  }
  return {
    prose,
    thought: root['thought'] ?? '',
    answer: root['answer'] ?? null,
    toolCall: call
      ? {
          status: call['status'] ?? '',
          target: call['target'] ?? '',
          code: call['code'] ?? '',
          message: call['message'] ?? ''
        }
      : null,
    complete: doc.complete
  };
}

class TomlError extends Error {}

interface IDoc {
  tables: { [name: string]: Table };
  complete: boolean;
}

const ESCAPES: { [key: string]: string } = {
  b: '\b',
  t: '\t',
  n: '\n',
  f: '\f',
  r: '\r',
  '"': '"',
  '\\': '\\'
};

/** The tables of a TOML document (`''` for the root), or `null` if it does not read. */
export function readToml(text: string): IDoc | null {
  try {
    return new Reader(text).read();
  } catch (err) {
    if (err instanceof TomlError) {
      return null;
    }
    throw err;
  }
}

class Reader {
  private pos = 0;
  private table: Table = {};
  private doc: IDoc = { tables: {}, complete: true };

  constructor(private text: string) {
    this.doc.tables[''] = this.table;
  }

  read(): IDoc {
    for (;;) {
      this.skipBlank();
      if (this.pos >= this.text.length || !this.doc.complete) {
        return this.doc;
      }
      if (this.text[this.pos] === '[') {
        this.header();
      } else {
        this.pair();
      }
      if (this.doc.complete) {
        this.endOfLine();
      }
    }
  }

  /** Spaces, newlines and comments. */
  private skipBlank(): void {
    const blank = /(?:[ \t\n]+|#[^\n]*)*/y;
    blank.lastIndex = this.pos;
    blank.exec(this.text);
    this.pos = blank.lastIndex;
  }

  /** The rest of a line after a value or header: spaces and a comment only. */
  private endOfLine(): void {
    const rest = /[ \t]*(?:#[^\n]*)?(?:\n|$)/y;
    rest.lastIndex = this.pos;
    if (!rest.exec(this.text)) {
      throw new TomlError('text after a value');
    }
    this.pos = rest.lastIndex;
  }

  private header(): void {
    const match = /\[\[?[ \t]*([A-Za-z0-9_.-]+)[ \t]*\]\]?/y;
    match.lastIndex = this.pos;
    const found = match.exec(this.text);
    if (!found) {
      throw new TomlError('bad table header');
    }
    this.pos = match.lastIndex;
    this.table = this.doc.tables[found[1]] ?? {};
    this.doc.tables[found[1]] = this.table;
  }

  private pair(): void {
    const key = /([A-Za-z0-9_-]+|"[^"\n]*"|'[^'\n]*')[ \t]*=[ \t]*/y;
    key.lastIndex = this.pos;
    const found = key.exec(this.text);
    if (!found) {
      throw new TomlError('expected key = value');
    }
    this.pos = key.lastIndex;
    const name = found[1].replace(/^["']|["']$/g, '');
    this.table[name] = this.value();
  }

  private value(): string {
    const text = this.text;
    for (const delimiter of ['"""', "'''"]) {
      if (text.startsWith(delimiter, this.pos)) {
        return this.multiline(delimiter);
      }
    }
    const quote = text[this.pos];
    if (quote === '"' || quote === "'") {
      return this.line(quote);
    }
    // A number, a boolean, an inline array...: its text, up to a comment or the line's end.
    const bare = /[^\n#]*/y;
    bare.lastIndex = this.pos;
    const raw = bare.exec(text)![0];
    this.pos = bare.lastIndex;
    if (!raw.trim()) {
      throw new TomlError('missing value');
    }
    return raw.trim();
  }

  private multiline(delimiter: string): string {
    const text = this.text;
    let start = this.pos + 3;
    if (text[start] === '\n') {
      start += 1; // a newline right after the opening delimiter is not part of the string
    }
    const basic = delimiter === '"""';
    let i = start;
    for (;;) {
      const end = text.indexOf(delimiter, i);
      if (end < 0) {
        this.doc.complete = false;
        this.pos = text.length;
        const body = text.slice(start);
        return basic ? unescape(body.replace(/\\$/, '')) : body;
      }
      if (basic && escaped(text, end)) {
        i = end + 1;
        continue;
      }
      // Up to two quotes right before the closing delimiter belong to the string.
      let close = end;
      while (text[close + 3] === delimiter[0] && close < end + 2) {
        close += 1;
      }
      this.pos = close + 3;
      const body = text.slice(start, close);
      return basic ? unescape(body) : body;
    }
  }

  private line(quote: string): string {
    const text = this.text;
    const start = this.pos + 1;
    let i = start;
    for (;;) {
      const end = text.indexOf(quote, i);
      const newline = text.indexOf('\n', i);
      if (end < 0 || (newline >= 0 && newline < end)) {
        if (end < 0 && newline < 0) {
          this.doc.complete = false; // the reply stops inside the string: still streaming
          this.pos = text.length;
          return quote === '"'
            ? unescape(text.slice(start))
            : text.slice(start);
        }
        throw new TomlError('a string left open at the end of its line');
      }
      if (quote === '"' && escaped(text, end)) {
        i = end + 1;
        continue;
      }
      this.pos = end + 1;
      const body = text.slice(start, end);
      return quote === '"' ? unescape(body) : body;
    }
  }
}

/** Whether the character at `at` is escaped by an odd run of backslashes before it. */
function escaped(text: string, at: number): boolean {
  let n = 0;
  while (at - 1 - n >= 0 && text[at - 1 - n] === '\\') {
    n += 1;
  }
  return n % 2 === 1;
}

/** The value of a basic string's body: escapes, and line-ending backslashes. */
function unescape(body: string): string {
  return body.replace(
    /\\(?:([btnfr"\\])|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|[ \t]*\n[ \t\n]*)/g,
    (_whole: string, simple?: string, u4?: string, u8?: string) => {
      if (simple !== undefined) {
        return ESCAPES[simple];
      }
      const hex = u4 ?? u8;
      if (hex !== undefined) {
        const code = parseInt(hex, 16);
        return code <= 0x10ffff ? String.fromCodePoint(code) : '';
      }
      return ''; // a line-ending backslash joins the lines
    }
  );
}
