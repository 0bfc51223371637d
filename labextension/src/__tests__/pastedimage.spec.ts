import { imageMarkdown, pastedImageName } from '../pastedimage';

const WHEN = new Date(2026, 10, 28, 1, 2, 3);

describe('pastedImageName', () => {
  it('names the image after the conversation and the time', () => {
    expect(pastedImageName('trip.msg.md', 'image/png', WHEN)).toBe(
      'trip-pasted-20261128-010203.png'
    );
    expect(pastedImageName('notes.md', 'image/jpeg', WHEN)).toBe(
      'notes-pasted-20261128-010203.jpg'
    );
  });

  it('numbers later attempts and never makes a hidden name', () => {
    expect(pastedImageName('trip.msg.md', 'image/png', WHEN, 3)).toBe(
      'trip-pasted-20261128-010203-3.png'
    );
    expect(pastedImageName('.hidden.msg.md', 'image/gif', WHEN)).toBe(
      'message-pasted-20261128-010203.gif'
    );
  });
});

describe('imageMarkdown', () => {
  it('links the file, in angle brackets when its name has blanks', () => {
    expect(imageMarkdown('a.png')).toBe('![pasted image](a.png)');
    expect(imageMarkdown('my trip-pasted.png')).toBe(
      '![pasted image](<my trip-pasted.png>)'
    );
  });
});
