/**
 * Model output is untrusted: what its HTML may keep, which URLs it may load (judged by
 * `urlpolicy.ts` against this page), and the click-to-load placeholders of remote media.
 *
 * Every piece of model HTML goes through JupyterLab's own sanitizer and then through
 * `secureFragment`, in an inert `<template>` (nothing in it loads or runs), before it
 * reaches the page:
 *
 * - elements that run or embed things are removed, even if a sanitizer let them through;
 *   event handlers, command-linker attributes (a click would run a JupyterLab command),
 *   `srcset`, `ping`, `formaction` and CSS that loads a URL are dropped; a form becomes a
 *   plain block (it would navigate the page);
 * - a media URL loads at once only when it is a file the Jupyter server serves (its base
 *   URL plus `files/`, JupyterHub's `/user/NAME/files/` included) or a `data:` PNG, JPEG,
 *   GIF or WebP image. A path relative to the notebook is held back (no `src`) until the
 *   notebook's resolver has turned it into its URL, then judged again (`loadHeldMedia`):
 *   the browser would load it against the page's own URL first. Other http(s) media, this
 *   server's other URLs included (`/logout`), become a placeholder naming the host, loaded
 *   by a click (or always, with the `loadRemoteMedia` setting); anything else is refused,
 *   with a note saying so.
 */

import { PageConfig } from '@jupyterlab/coreutils';
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { trans } from './translation';
import {
  classifyUrlIn,
  MediaKind,
  normalizeUrl,
  UrlUse,
  UrlVerdict
} from './urlpolicy';

/** What `raw` is on this page, as the browser would read it (`classifyUrlIn`). */
export function classifyUrl(raw: string, use: UrlUse): UrlVerdict {
  return classifyUrlIn(raw, use, {
    serverBase: PageConfig.getBaseUrl(),
    documentBase: document.baseURI,
    origin: window.location.origin
  });
}

/** Whether remote media load without a click (the `loadRemoteMedia` setting). */
let loadRemote = false;
/** Remote URLs the user clicked to load in this page: a re-render keeps them loaded. */
const clicked = new Set<string>();

export function setLoadRemoteMedia(value: boolean): void {
  loadRemote = value;
}

/** Whether remote media at `url` may load: clicked, or with the setting, which never
 * covers this server's own URLs (`/logout`...: only a click loads those). */
function remoteAllowed(url: string): boolean {
  return clicked.has(url) || (loadRemote && !sameOrigin(url));
}

function sameOrigin(url: string): boolean {
  try {
    return new URL(url, document.baseURI).origin === window.location.origin;
  } catch {
    return false;
  }
}

/** A URL cut to a length a note can show. */
function shown(url: string): string {
  return url.length > 200 ? `${url.slice(0, 200)}…` : url;
}

/** The note that replaces media whose URL was refused. */
export function refusedNote(
  doc: Document,
  use: UrlUse,
  verdict: { url: string; reason: string }
): HTMLElement {
  const note = doc.createElement('span');
  note.className = 'jp-PercentAgent-refused';
  const t = trans();
  const refused = {
    link: () => t.__('Link URL refused (%1): ', verdict.reason),
    image: () => t.__('Image URL refused (%1): ', verdict.reason),
    video: () => t.__('Video URL refused (%1): ', verdict.reason),
    audio: () => t.__('Audio URL refused (%1): ', verdict.reason)
  };
  note.appendChild(doc.createTextNode(refused[use]()));
  const code = doc.createElement('code');
  code.textContent = shown(verdict.url);
  note.appendChild(code);
  return note;
}

/** The placeholder of remote media: a button naming the host that loads it. */
export function remotePlaceholder(
  doc: Document,
  kind: MediaKind,
  verdict: { url: string; host: string },
  alt = ''
): HTMLElement {
  const box = doc.createElement('span');
  box.className = 'jp-PercentAgent-remoteMedia';
  box.dataset['kind'] = kind;
  box.dataset['src'] = verdict.url;
  if (alt) {
    box.dataset['alt'] = alt;
  }
  const button = doc.createElement('button');
  button.type = 'button';
  button.className = 'jp-PercentAgent-remoteLoad';
  const t = trans();
  button.title = `${alt ? `${alt}\n` : ''}${t.__('Load %1', verdict.url)}`;
  const load = {
    image: () => t.__('Load image from %1', verdict.host),
    video: () => t.__('Load video from %1', verdict.host),
    audio: () => t.__('Load audio from %1', verdict.host)
  };
  button.textContent = load[kind]();
  box.appendChild(button);
  return box;
}

/** The media element for `url` (already judged loadable). */
export function mediaElement(
  doc: Document,
  kind: MediaKind,
  url: string,
  alt = ''
): HTMLElement {
  if (kind === 'image') {
    const img = doc.createElement('img');
    img.src = url;
    img.alt = alt;
    return img;
  }
  const media = doc.createElement(kind);
  media.src = url;
  media.controls = true;
  media.preload = 'metadata';
  return media;
}

/**
 * `img`, `video` or `audio` for `url`, a placeholder for remote media not yet allowed,
 * or the refusal note.
 */
export function mediaFor(
  doc: Document,
  kind: MediaKind,
  url: string,
  alt = ''
): HTMLElement {
  const verdict = classifyUrl(url, kind);
  switch (verdict.kind) {
    case 'relative': // not resolved: the browser would load it against the page's URL
      return mediaFor(doc, kind, pageUrl(url), alt);
    case 'local':
    case 'data':
      return mediaElement(doc, kind, verdict.url, alt);
    case 'remote':
      return remoteAllowed(verdict.url)
        ? mediaElement(doc, kind, verdict.url, alt)
        : remotePlaceholder(doc, kind, verdict, alt);
    case 'refused':
      return refusedNote(doc, kind, verdict);
  }
}

// Elements that run, embed or redirect: never kept, whatever a sanitizer let through.
const REMOVED = new Set([
  'script',
  'iframe',
  'frame',
  'frameset',
  'object',
  'embed',
  'applet',
  'svg',
  'math',
  'meta',
  'link',
  'style',
  'base',
  'noscript',
  'template',
  'portal'
]);
const DROPPED_ATTRIBUTES = new Set([
  'srcset',
  'ping',
  'formaction',
  'action',
  'background',
  'lowsrc',
  'dynsrc',
  'xlink:href'
]);
// CSS that can fetch: url(...), image-set(...), image(...), @import, escapes that hide them.
const LOADING_CSS =
  /\\|url\s*\(|image-set|image\s*\(|cross-fade|element\s*\(|src\s*\(|@import/i;

/** Make a sanitized fragment safe to show: see the module's docstring. */
export function secureFragment(root: DocumentFragment | Element): void {
  const doc = root.ownerDocument ?? document;
  // A static list: elements are replaced while walking it.
  for (const el of Array.from(root.querySelectorAll('*'))) {
    const name = el.localName;
    if (REMOVED.has(name)) {
      el.remove();
      continue;
    }
    for (const attr of Array.from(el.attributes)) {
      const key = attr.name.toLowerCase();
      if (
        key.startsWith('on') ||
        key.startsWith('data-commandlinker') ||
        DROPPED_ATTRIBUTES.has(key) ||
        (key === 'style' && LOADING_CSS.test(attr.value))
      ) {
        el.removeAttribute(attr.name);
      }
    }
    if (name === 'a' || name === 'area') {
      const href = el.getAttribute('href');
      if (href !== null && classifyUrl(href, 'link').kind === 'refused') {
        el.removeAttribute('href');
      }
    } else if (name === 'form') {
      const block = doc.createElement('div');
      block.append(...Array.from(el.childNodes));
      el.replaceWith(block);
    } else if (
      name === 'img' ||
      (name === 'input' && el.getAttribute('type') === 'image')
    ) {
      gateMedia(el, 'image', el.getAttribute('src') ?? '', doc);
    } else if (name === 'video' || name === 'audio') {
      gateMediaElement(el, name, doc);
    }
  }
}

function gateMedia(
  el: Element,
  kind: MediaKind,
  src: string,
  doc: Document
): void {
  if (!src) {
    return;
  }
  const alt = el.getAttribute('alt') ?? '';
  const verdict = classifyUrl(src, kind);
  if (verdict.kind === 'local' || verdict.kind === 'data') {
    return;
  }
  if (verdict.kind === 'relative') {
    holdBack(el, 'src', src);
    return;
  }
  if (verdict.kind === 'remote' && remoteAllowed(verdict.url)) {
    return;
  }
  el.replaceWith(
    verdict.kind === 'remote'
      ? remotePlaceholder(doc, kind, verdict, alt)
      : refusedNote(doc, kind, verdict)
  );
}

/** A `<video>` or `<audio>`: its `src`, `poster` and `<source>`/`<track>` children. */
function gateMediaElement(
  el: Element,
  kind: 'video' | 'audio',
  doc: Document
): void {
  const uses: [Element, string, string, MediaKind][] = [];
  for (const node of [
    el,
    ...Array.from(el.querySelectorAll('source, track'))
  ]) {
    const src = node.getAttribute('src');
    if (src) {
      uses.push([node, 'src', src, kind]);
    }
  }
  const poster = el.getAttribute('poster');
  if (poster) {
    uses.push([el, 'poster', poster, 'image']);
  }
  for (const [node, attr, url, use] of uses) {
    const verdict = classifyUrl(url, use);
    if (verdict.kind === 'relative') {
      holdBack(node, attr, url);
    } else if (verdict.kind === 'refused') {
      el.replaceWith(refusedNote(doc, use, verdict));
      return;
    }
    if (verdict.kind === 'remote' && !remoteAllowed(verdict.url)) {
      el.replaceWith(remotePlaceholder(doc, kind, verdict));
      return;
    }
  }
}

/** The attributes media URLs relative to the notebook wait in, without loading. */
const HELD = ['src', 'poster'];
const held = (attr: string): string => `data-percent-agent-held-${attr}`;

/** Keep `url` out of `el`'s `attr` (nothing loads it) until `loadHeldMedia` resolves it. */
function holdBack(el: Element, attr: string, url: string): void {
  el.removeAttribute(attr);
  el.setAttribute(held(attr), url);
}

/** `url` as the page would load it, against its own URL. */
function pageUrl(url: string): string {
  try {
    return new URL(normalizeUrl(url), document.baseURI).href;
  } catch {
    return url;
  }
}

/**
 * The URL a media element loads for `url`, as JupyterLab's renderers load it: a path
 * relative to the notebook is what the notebook's resolver makes of it (a `files/` URL, as
 * a rule); any other URL, or any URL without a resolver, as the page reads it.
 */
export async function resolvedUrl(
  url: string,
  resolver: IRenderMime.IResolver | null | undefined
): Promise<string> {
  if (resolver && classifyUrl(url, 'image').kind === 'relative') {
    try {
      return pageUrl(
        await resolver.getDownloadUrl(await resolver.resolveUrl(url))
      );
    } catch {
      return pageUrl(url);
    }
  }
  return pageUrl(url);
}

/**
 * Load the media `secureFragment` held back in `host` (paths relative to the notebook) at
 * the URL `resolver` gives them, if that URL may load: else the placeholder or the note.
 * Call it once the render that sanitized `host`'s HTML is done.
 */
export async function loadHeldMedia(
  host: HTMLElement,
  resolver: IRenderMime.IResolver | null | undefined
): Promise<void> {
  for (const attr of HELD) {
    for (const node of Array.from(host.querySelectorAll(`[${held(attr)}]`))) {
      const url = node.getAttribute(held(attr)) ?? '';
      node.removeAttribute(held(attr));
      const media = node.closest('video, audio') ?? node;
      const kind: MediaKind =
        attr === 'poster' ||
        (media.localName !== 'video' && media.localName !== 'audio')
          ? 'image'
          : (media.localName as MediaKind);
      const verdict = classifyUrl(await resolvedUrl(url, resolver), kind);
      if (
        verdict.kind === 'local' ||
        verdict.kind === 'data' ||
        (verdict.kind === 'remote' && remoteAllowed(verdict.url))
      ) {
        node.setAttribute(attr, verdict.url);
        if (media !== node && media instanceof HTMLMediaElement) {
          media.load(); // a <source> set after the element was made
        }
      } else {
        const alt = media.getAttribute('alt') ?? '';
        media.replaceWith(
          verdict.kind === 'remote'
            ? remotePlaceholder(document, kind, verdict, alt)
            : refusedNote(document, kind, {
                url,
                reason:
                  verdict.kind === 'refused'
                    ? verdict.reason
                    : 'it is not a URL'
              })
        );
      }
    }
  }
}

/** Sanitize model HTML with JupyterLab's sanitizer, then `secureFragment` it. */
export function sanitizeModelHtml(
  sanitizer: IRenderMime.ISanitizer,
  dirty: string
): string {
  const template = document.createElement('template');
  template.innerHTML = sanitizer.sanitize(dirty);
  secureFragment(template.content);
  return template.innerHTML;
}

/**
 * A sanitizer for model output: JupyterLab's own (`inner`), then `secureFragment`.
 * Given to JupyterLab's renderers with `trusted: false`, so every HTML string they set
 * goes through it.
 */
export function modelSanitizer(
  inner: IRenderMime.ISanitizer
): IRenderMime.ISanitizer {
  if (modelSanitizers.has(inner)) {
    return inner;
  }
  const outer: IRenderMime.ISanitizer = {
    sanitize: (dirty: string) => sanitizeModelHtml(inner, dirty),
    getAutolink: () => inner.getAutolink?.() ?? true,
    allowNamedProperties: inner.allowNamedProperties ?? false,
    allowCommandLinker: false
  };
  modelSanitizers.add(outer);
  return outer;
}

const modelSanitizers = new WeakSet<IRenderMime.ISanitizer>();

const armed = new WeakSet<HTMLElement>();

/**
 * Make the remote-media placeholders in `host` load their media on a click (once per
 * host node; placeholders rendered into it later work too).
 */
export function armRemoteMedia(host: HTMLElement): void {
  if (armed.has(host)) {
    return;
  }
  armed.add(host);
  host.addEventListener('click', event => {
    const target = event.target as Element | null;
    const button = target?.closest?.('.jp-PercentAgent-remoteLoad');
    const box = button?.closest(
      '.jp-PercentAgent-remoteMedia'
    ) as HTMLElement | null;
    if (!box || !host.contains(box)) {
      return;
    }
    event.preventDefault();
    event.stopPropagation();
    const kind = box.dataset['kind'] as MediaKind | undefined;
    const verdict = classifyUrl(box.dataset['src'] ?? '', kind ?? 'image');
    if (kind === undefined || verdict.kind !== 'remote') {
      return;
    }
    clicked.add(verdict.url);
    box.replaceWith(
      mediaElement(document, kind, verdict.url, box.dataset['alt'] ?? '')
    );
  });
}
