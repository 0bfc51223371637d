/**
 * Which URLs model output may load or link to: the policy of `untrusted.ts`, apart from the
 * page it runs in (no DOM, no JupyterLab), so that it can be tested on its own.
 */

export type MediaKind = 'image' | 'video' | 'audio';
/** What a URL is used for: a media element, or a link the user may follow. */
export type UrlUse = MediaKind | 'link';

export type UrlVerdict =
  /** A file the Jupyter server serves (base URL plus `files/`); for a link, any URL of
   * this page's origin. */
  | { kind: 'local'; url: string }
  /** Media at a path relative to the notebook: loads once resolved (`loadHeldMedia`). */
  | { kind: 'relative'; url: string }
  /** A `data:` raster image (PNG, JPEG, GIF, WebP). */
  | { kind: 'data'; url: string }
  /** Another host: loads after a click, or with the `loadRemoteMedia` setting. */
  | { kind: 'remote'; url: string; host: string }
  | { kind: 'refused'; url: string; reason: string };

const RASTER_DATA = /^data:image\/(png|jpeg|jpg|gif|webp)(;[^,]*)?,/i;
const SCHEME = /^([a-z][a-z0-9+.-]*):/i;

/** C0 control characters and spaces around a URL, which browsers strip before parsing it:
 * control characters are the point here. */
// eslint-disable-next-line no-control-regex
const EDGE_CONTROLS = /^[\u0000-\u0020]+|[\u0000-\u0020]+$/g;

/** A URL as browsers read it: no tabs or newlines in it, no control characters around it. */
export function normalizeUrl(raw: string): string {
  return raw.replace(/[\t\n\r]/g, '').replace(EDGE_CONTROLS, '');
}

/** Where the page is: what a URL in it is judged against. */
export interface IPageUrls {
  /** The Jupyter server's base URL (`PageConfig.getBaseUrl()`). */
  serverBase: string;
  /** The URL relative URLs resolve against (`document.baseURI`). */
  documentBase: string;
  /** The page's origin (`window.location.origin`): a link there stays in JupyterLab. */
  origin: string;
}

/** Whether `url` (parsed) is a file the Jupyter server serves: under its base URL plus
 * `files/` (JupyterHub's `/user/NAME/files/`), on this page's origin. */
function servedFile(url: URL, page: IPageUrls): boolean {
  const base = page.serverBase;
  const root = new URL(
    base.endsWith('/') ? base : `${base}/`,
    page.documentBase
  );
  const files = new URL('files/', root);
  return url.origin === files.origin && url.pathname.startsWith(files.pathname);
}

/**
 * What `raw` is on the page at `page`, as the browser would read it (tabs and newlines
 * inside a URL and control characters around it are ignored by browsers, so they are
 * here too).
 */
export function classifyUrlIn(
  raw: string,
  use: UrlUse,
  page: IPageUrls
): UrlVerdict {
  const url = normalizeUrl(raw);
  if (!url) {
    return { kind: 'refused', url: raw, reason: 'the URL is empty' };
  }
  let parsed: URL;
  try {
    parsed = new URL(url, page.documentBase);
  } catch {
    return { kind: 'refused', url, reason: 'it is not a URL' };
  }
  const scheme = SCHEME.exec(url);
  if (use !== 'link' && scheme === null && !/^[/\\]/.test(url)) {
    return { kind: 'relative', url };
  }
  if (
    scheme === null ||
    parsed.protocol === 'http:' ||
    parsed.protocol === 'https:'
  ) {
    if (
      use === 'link' ? parsed.origin === page.origin : servedFile(parsed, page)
    ) {
      return { kind: 'local', url };
    }
    if (parsed.protocol === 'http:' || parsed.protocol === 'https:') {
      return { kind: 'remote', url: parsed.href, host: parsed.host };
    }
    return {
      kind: 'refused',
      url,
      reason: 'it is not an http(s) URL or a path'
    };
  }
  if (parsed.protocol === 'data:') {
    if (use === 'image' && RASTER_DATA.test(url)) {
      return { kind: 'data', url };
    }
    return {
      kind: 'refused',
      url,
      reason: 'only PNG, JPEG, GIF and WebP images may be data: URLs'
    };
  }
  return {
    kind: 'refused',
    url,
    reason: `${parsed.protocol} URLs are not allowed`
  };
}
