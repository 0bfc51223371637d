/**
 * The permission request in an `input_request` (`permissionrequest.ts`): what the dialog
 * shows, read field by field; any other input request is not one.
 */

import { PERMISSION_KEY, permissionRequest } from '../permissionrequest';

describe('permissionRequest', () => {
  it("reads the tool's title, kind, command, diffs and the agent's options", () => {
    const request = permissionRequest({
      prompt: 'coder asks permission: write_text_file (edit)',
      password: false,
      [PERMISSION_KEY]: {
        agent: 'coder',
        title: 'write_text_file',
        kind: 'edit',
        locations: ['notes.txt'],
        command: null,
        diffs: [{ path: 'notes.txt', diff: '--- a/notes.txt\n' }],
        options: [
          { id: 'allow_once', name: 'Allow Once', kind: 'allow_once' },
          { id: 'reject_once', name: 'Reject Once', kind: 'reject_once' }
        ]
      }
    });
    expect(request).toEqual({
      agent: 'coder',
      title: 'write_text_file',
      kind: 'edit',
      locations: ['notes.txt'],
      command: null,
      diffs: [{ path: 'notes.txt', diff: '--- a/notes.txt\n' }],
      options: [
        { id: 'allow_once', name: 'Allow Once', kind: 'allow_once' },
        { id: 'reject_once', name: 'Reject Once', kind: 'reject_once' }
      ]
    });
  });

  it('is null for an input request of any other kind (input() in a kernel)', () => {
    expect(permissionRequest({ prompt: 'Name? ', password: false })).toBeNull();
  });

  it('leaves out what is not of its type', () => {
    const request = permissionRequest({
      [PERMISSION_KEY]: {
        title: { html: '<b>x</b>' },
        options: [
          { id: 1, name: 'no id' },
          { id: 'ok', name: 'OK' }
        ],
        locations: ['a.txt', 3]
      }
    });
    expect(request?.title).toBe('');
    expect(request?.options).toEqual([{ id: 'ok', name: 'OK', kind: '' }]);
    expect(request?.locations).toEqual(['a.txt']);
  });
});
