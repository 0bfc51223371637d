/**
 * Which URLs model output may load or link to (`urlpolicy.ts`), on a page served under a
 * JupyterHub user's base URL.
 */

import { classifyUrlIn, IPageUrls, normalizeUrl } from '../urlpolicy';

const PAGE: IPageUrls = {
  serverBase: '/user/ada/',
  documentBase: 'https://hub.example/user/ada/lab/tree/notes/trip.msg.md',
  origin: 'https://hub.example'
};

describe('normalizeUrl', () => {
  it('drops tabs and newlines inside and control characters around', () => {
    expect(normalizeUrl('\u0000 java\tscr\nipt:alert(1)\u001f ')).toBe(
      'javascript:alert(1)'
    );
  });
});

describe('classifyUrlIn', () => {
  it("loads a file the server serves, under the user's files/", () => {
    const url = 'https://hub.example/user/ada/files/plot.png';
    expect(classifyUrlIn(url, 'image', PAGE)).toEqual({ kind: 'local', url });
    expect(classifyUrlIn('/user/ada/files/a.mp4', 'video', PAGE).kind).toBe(
      'local'
    );
  });

  it("holds back another of this server's URLs as remote media", () => {
    expect(classifyUrlIn('/user/ada/logout', 'image', PAGE)).toEqual({
      kind: 'remote',
      url: 'https://hub.example/user/ada/logout',
      host: 'hub.example'
    });
    expect(classifyUrlIn('/user/bob/files/a.png', 'image', PAGE).kind).toBe(
      'remote'
    );
  });

  it('lets a link stay anywhere on the page origin', () => {
    expect(classifyUrlIn('/user/ada/lab', 'link', PAGE).kind).toBe('local');
  });

  it('holds a path relative to the notebook until it is resolved', () => {
    expect(classifyUrlIn('img/plot.png', 'image', PAGE)).toEqual({
      kind: 'relative',
      url: 'img/plot.png'
    });
    expect(classifyUrlIn('img/plot.png', 'link', PAGE).kind).toBe('local');
  });

  it('names the host of remote media', () => {
    expect(
      classifyUrlIn('http://cdn.example:8080/a.png', 'image', PAGE)
    ).toEqual({
      kind: 'remote',
      url: 'http://cdn.example:8080/a.png',
      host: 'cdn.example:8080'
    });
  });

  it('takes data: URLs only for PNG, JPEG, GIF and WebP images', () => {
    const png = 'data:image/png;base64,iVBORw0KGgo=';
    expect(classifyUrlIn(png, 'image', PAGE)).toEqual({
      kind: 'data',
      url: png
    });
    expect(classifyUrlIn('data:image/svg+xml,<svg/>', 'image', PAGE).kind).toBe(
      'refused'
    );
    expect(classifyUrlIn(png, 'link', PAGE).kind).toBe('refused');
    expect(classifyUrlIn('data:video/mp4,AAAA', 'video', PAGE).kind).toBe(
      'refused'
    );
  });

  it('refuses script URLs, however disguised', () => {
    for (const url of [
      'javascript:alert(1)',
      ' JaVaScRiPt:alert(1)',
      'java\tscript:alert(1)',
      '\u0001javascript:alert(1)',
      'vbscript:msgbox(1)'
    ]) {
      const verdict = classifyUrlIn(url, 'link', PAGE);
      expect(verdict.kind).toBe('refused');
    }
    expect(classifyUrlIn('javascript:alert(1)', 'link', PAGE)).toMatchObject({
      reason: 'javascript: URLs are not allowed'
    });
  });

  it('refuses an empty URL and one that does not parse', () => {
    expect(classifyUrlIn(' \t', 'image', PAGE)).toMatchObject({
      kind: 'refused',
      reason: 'the URL is empty'
    });
    expect(classifyUrlIn('http://[::1', 'image', PAGE)).toMatchObject({
      kind: 'refused',
      reason: 'it is not a URL'
    });
  });

  it('treats a protocol-relative URL to another host as remote', () => {
    expect(classifyUrlIn('//evil.example/a.png', 'image', PAGE)).toMatchObject({
      kind: 'remote',
      host: 'evil.example'
    });
    expect(classifyUrlIn('//evil.example/x', 'link', PAGE).kind).toBe('remote');
  });
});
