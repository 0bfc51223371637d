/**
 * The Jarvis display tags: `<video>`, `<img>`, `<text>` and `<download>` blocks whose
 * body is a JSON object, written by agents in their replies for the front end to show
 * as media (seed 004, "前端解析约定").
 *
 * A reply is rendered in two steps: `extractJarvisTags` (`jarvistags.ts`) swaps every tag (outside fenced
 * code) for a placeholder paragraph before the Markdown is rendered, and
 * `replaceJarvisPlaceholders` swaps the rendered placeholders for the media elements.
 */

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { el } from './dom';
import { IJarvisTag } from './jarvistags';
import { trans } from './translation';
import { classifyUrl, mediaFor, refusedNote, resolvedUrl } from './untrusted';

/**
 * Swap the rendered placeholders in `host` for the media elements of `tags`.
 */
export async function replaceJarvisPlaceholders(
  host: HTMLElement,
  token: string,
  tags: IJarvisTag[],
  resolver: IRenderMime.IResolver | null
): Promise<void> {
  const paragraphs = Array.from(host.querySelectorAll('p'));
  for (const p of paragraphs) {
    const text = (p.textContent ?? '').trim();
    if (!text.startsWith(token)) {
      continue;
    }
    const tag = tags[Number(text.slice(token.length))];
    if (tag) {
      p.replaceWith(await renderTag(tag, resolver));
    }
  }
}

function str(value: unknown): string {
  if (value === undefined || value === null) {
    return '';
  }
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The URL of a payload: `url`, or `data.url` as in the seed's video example. */
function payloadUrl(payload: { [key: string]: unknown }): string {
  const data = payload['data'];
  if (payload['url'] !== undefined) {
    return str(payload['url']);
  }
  if (data !== null && typeof data === 'object' && 'url' in data) {
    return str((data as { [key: string]: unknown })['url']);
  }
  return '';
}

/** A link the user may follow (http(s) or a path), else the note that it was refused. */
function link(url: string, className: string, text: string): HTMLElement {
  const verdict = classifyUrl(url, 'link');
  if (verdict.kind === 'refused') {
    return refusedNote(document, 'link', verdict);
  }
  const a = el('a', className, text);
  a.href = verdict.url;
  a.target = '_blank';
  a.rel = 'noopener noreferrer';
  return a;
}

async function renderTag(
  tag: IJarvisTag,
  resolver: IRenderMime.IResolver | null
): Promise<HTMLElement> {
  const { kind, payload } = tag;
  const box = el('figure', `jp-PercentAgent-media jp-PercentAgent-${kind}`);
  box.dataset['jarvis'] = kind;
  const label = str(payload['type']);
  switch (kind) {
    case 'img':
    case 'video': {
      const url = payloadUrl(payload);
      const media = kind === 'img' ? 'image' : 'video';
      box.appendChild(
        mediaFor(
          document,
          media,
          await resolvedUrl(url, resolver),
          label || url
        )
      );
      break;
    }
    case 'text': {
      const data = payload['data'];
      const table = el('table', 'jp-PercentAgent-textData');
      const rows =
        data !== null && typeof data === 'object' && !Array.isArray(data)
          ? Object.entries(data as { [key: string]: unknown })
          : [['', data] as [string, unknown]];
      for (const [key, value] of rows) {
        const tr = el('tr', '');
        tr.appendChild(el('th', '', key));
        tr.appendChild(el('td', '', str(value)));
        table.appendChild(tr);
      }
      box.appendChild(table);
      break;
    }
    case 'download': {
      const url = payloadUrl(payload);
      const text = `⬇ ${label || trans().__('Download')}`;
      if (url) {
        const a = link(url, 'jp-PercentAgent-download', text);
        if (a instanceof HTMLAnchorElement) {
          a.download = '';
        }
        box.appendChild(a);
      } else {
        // No URL: the export is fetched by the application with its `auth` token.
        const button = el('button', 'jp-PercentAgent-download', text);
        button.disabled = true;
        button.title = trans().__(
          'Export handled by the application that issued it'
        );
        box.appendChild(button);
      }
      break;
    }
  }
  if (label && kind !== 'download') {
    box.appendChild(el('figcaption', '', label));
  }
  return box;
}
