/**
 * Diffs in tool outputs and the permission dialog (`diff.ts`): each line is classed by what
 * it is, and only a real unified diff is taken for one.
 */

import { diffLines, isUnifiedDiff } from '../diff';

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

describe('isUnifiedDiff', () => {
  it('knows a unified diff', () => {
    expect(isUnifiedDiff(DIFF)).toBe(true);
  });

  it('takes a list of plus and minus lines for no diff', () => {
    expect(isUnifiedDiff('- one\n- two\n+ three\n')).toBe(false);
  });
});
