/**
 * The Jarvis display tags in a reply's Markdown (`jarvistags.ts`): which are taken, what
 * their placeholders are, and which are left as written.
 */

import { extractJarvisTags } from '../jarvistags';

const TOKEN = 'JARVIS-PLACEHOLDER-';

describe('extractJarvisTags', () => {
  it('swaps a tag with a JSON body for a numbered placeholder paragraph', () => {
    const reply = 'Here:\n<img>{"url": "files/a.png", "alt": "A"}</img>\nDone.';
    expect(extractJarvisTags(reply, TOKEN)).toEqual({
      source: `Here:\n\n\n${TOKEN}0\n\n\nDone.`,
      tags: [{ kind: 'img', payload: { url: 'files/a.png', alt: 'A' } }]
    });
  });

  it('takes a bare URL body as {url}, as a tool stream writes it', () => {
    const { tags } = extractJarvisTags(
      '<video>\nhttps://cdn.example/v.mp4\n</video>',
      TOKEN
    );
    expect(tags).toEqual([
      { kind: 'video', payload: { url: 'https://cdn.example/v.mp4' } }
    ]);
  });

  it('numbers several tags of every kind in order', () => {
    const reply =
      '<text>{"text": "t"}</text> and <download>{"url": "files/r.csv"}</download>';
    const { source, tags } = extractJarvisTags(reply, TOKEN);
    expect(tags.map(tag => tag.kind)).toEqual(['text', 'download']);
    expect(source).toContain(`${TOKEN}0`);
    expect(source).toContain(`${TOKEN}1`);
  });

  it('leaves tags in fenced code and inline code spans as written', () => {
    const reply = [
      'Write it like `<img>{"url": "x"}</img>` or:',
      '```html',
      '<img>{"url": "y"}</img>',
      '```',
      '~~~~',
      '<video>{"url": "z"}</video>',
      '~~~~'
    ].join('\n');
    expect(extractJarvisTags(reply, TOKEN)).toEqual({
      source: reply,
      tags: []
    });
  });

  it('takes a tag again once the fence is closed', () => {
    const reply = '```\ncode\n```\n<img>{"url": "files/a.png"}</img>';
    expect(extractJarvisTags(reply, TOKEN).tags).toHaveLength(1);
  });

  it('leaves a tag whose body is neither a JSON object nor a bare URL', () => {
    for (const reply of [
      '<img>[1, 2]</img>',
      '<img>{not json}</img>',
      '<img>files/a.png</img>',
      '<text>plain words</text>'
    ]) {
      expect(extractJarvisTags(reply, TOKEN)).toEqual({
        source: reply,
        tags: []
      });
    }
  });
});
