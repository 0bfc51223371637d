/**
 * What "Set up a model" sends for its fields (`setup.ts`): a provider's key, or the user's
 * own OpenAI-compatible server with its key. No JupyterLab import, so jest tests it.
 */

/** The provider list's entry for the user's own server (no litellm provider has a space). */
export const OWN_SERVER = 'own server';

/** A provider's key, or (`server` set) the user's own server and its key. */
export interface ISetup {
  provider?: string;
  key?: string;
  server?: string;
  server_key?: string;
  default_model: string;
}

/**
 * The request for the dialog's fields. For the user's own server an empty key field sends
 * no `server_key`, which keeps the key stored for that same URL (none for another URL).
 */
export function setupRequest(
  provider: string,
  key: string,
  url: string,
  model: string
): ISetup {
  if (provider === OWN_SERVER) {
    const request: ISetup = { server: url.trim(), default_model: model };
    if (key) {
      request.server_key = key;
    }
    return request;
  }
  return { provider, key, default_model: model };
}
