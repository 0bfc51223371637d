/**
 * Diffs in tool outputs and the permission dialog (`diff.ts`): each line is classed by what
 * it is, and only a real unified diff is taken for one.
 */

import { diffLines, diffStart } from '../diff';

const DIFF = [
  '--- a/notes.txt',
  '+++ b/notes.txt',
  '@@ -1,2 +1,2 @@',
  ' kept',
  '-old line',
  '+new line',
  ''
].join('\n');

describe('diffLines', () => {
  it('classes the file header, the hunk, context, removed and added lines', () => {
    expect(diffLines(DIFF).map(line => line.kind)).toEqual([
      'file',
      'file',
      'hunk',
      'context',
      'del',
      'add'
    ]);
  });

  it('keeps each line as it is, markup included', () => {
    const lines = diffLines('+<img src=x onerror=alert(1)>\n');
    expect(lines).toEqual([
      { kind: 'add', text: '+<img src=x onerror=alert(1)>' }
    ]);
  });
});

describe('diffStart', () => {
  it('finds the diff after the text of a tool result', () => {
    expect(diffStart('Wrote 9 characters\n' + DIFF)).toBe(19);
    expect(diffStart(DIFF)).toBe(0);
  });

  it('takes a list of plus and minus lines for no diff', () => {
    expect(diffStart('- one\n- two\n+ three\n')).toBe(-1);
  });
});
