/**
 * What "Set up a model" sends (`setuprequest.ts`): a provider's key, or the user's own server,
 * whose key is sent only when typed (an empty field keeps the one stored for that URL).
 */

import { OWN_SERVER, setupRequest } from '../setuprequest';

describe('setupRequest', () => {
  it('sends a provider with its key', () => {
    expect(
      setupRequest('openai', 'sk-1', 'http://ignored/v1', 'gpt-4o')
    ).toEqual({
      provider: 'openai',
      key: 'sk-1',
      default_model: 'gpt-4o'
    });
  });

  it('sends the own server with its key, and no provider', () => {
    expect(
      setupRequest(OWN_SERVER, 'sk-2', ' http://localhost:11434/v1 ', 'llama3')
    ).toEqual({
      server: 'http://localhost:11434/v1',
      server_key: 'sk-2',
      default_model: 'llama3'
    });
  });

  it('sends no server_key when the key field is empty', () => {
    expect(setupRequest(OWN_SERVER, '', 'http://gpu:8000/v1', 'm')).toEqual({
      server: 'http://gpu:8000/v1',
      default_model: 'm'
    });
  });
});
