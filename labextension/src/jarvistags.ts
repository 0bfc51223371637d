/**
 * Finding the Jarvis display tags in a reply's Markdown (see `jarvis.ts`): the text-only
 * half, apart from the DOM and JupyterLab, so that it can be tested on its own.
 */

export type JarvisKind = 'video' | 'img' | 'text' | 'download';

export interface IJarvisTag {
  kind: JarvisKind;
  /** The parsed JSON body, or `{url}` when the body is a bare URL. */
  payload: { [key: string]: unknown };
}

const TAG = /<(video|img|text|download)>\s*([\s\S]*?)\s*<\/\1>/g;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;
/** An inline code span: a run of backticks, then text, then a run of as many. */
const CODE_SPAN = /(?<!`)(`+)(?!`)[\s\S]*?(?<!`)\1(?!`)/g;

/**
 * Replace the Jarvis tags of `source` by placeholder paragraphs.
 *
 * Tags inside fenced code blocks and inline code spans are left alone (a reply may be
 * explaining the convention), and so is a tag whose body is neither a JSON object nor a
 * bare URL.
 */
export function extractJarvisTags(
  source: string,
  token: string
): { source: string; tags: IJarvisTag[] } {
  const tags: IJarvisTag[] = [];
  const replaceTags = (text: string): string =>
    text.replace(TAG, (whole: string, kind: JarvisKind, body: string) => {
      const payload = parseBody(body);
      if (payload === null) {
        return whole;
      }
      tags.push({ kind, payload });
      return `\n\n${token}${tags.length - 1}\n\n`;
    });
  // Prose between inline code spans only: a span is kept as it is.
  const replace = (text: string): string => {
    let out = '';
    let last = 0;
    const spans = new RegExp(CODE_SPAN.source, 'g');
    for (let span = spans.exec(text); span !== null; span = spans.exec(text)) {
      out += replaceTags(text.slice(last, span.index)) + span[0];
      last = span.index + span[0].length;
    }
    return out + replaceTags(text.slice(last));
  };

  // Split into runs of prose and fenced code; only prose is rewritten.
  const out: string[] = [];
  let prose: string[] = [];
  let fence: string | null = null;
  for (const line of source.split('\n')) {
    const match = FENCE.exec(line);
    if (fence === null) {
      if (match) {
        if (prose.length) {
          out.push(replace(prose.join('\n')));
        }
        prose = [];
        fence = match[1];
        out.push(line);
      } else {
        prose.push(line);
      }
    } else {
      out.push(line);
      if (
        match &&
        match[1][0] === fence[0] &&
        match[1].length >= fence.length &&
        line.trim() === match[1]
      ) {
        fence = null;
      }
    }
  }
  if (prose.length) {
    out.push(replace(prose.join('\n')));
  }
  return { source: out.join('\n'), tags };
}

function parseBody(body: string): { [key: string]: unknown } | null {
  const text = body.trim();
  if (text.startsWith('{')) {
    try {
      const value: unknown = JSON.parse(text);
      if (
        value !== null &&
        typeof value === 'object' &&
        !Array.isArray(value)
      ) {
        return value as { [key: string]: unknown };
      }
    } catch {
      return null;
    }
    return null;
  }
  // A bare URL, as a tool's stream chunk writes it: `<video>\n{url}\n</video>`.
  if (/^[a-z][a-z0-9+.-]*:\/\/\S+$/i.test(text)) {
    return { url: text };
  }
  return null;
}
