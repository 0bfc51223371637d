/**
 * Requests to the extension's server API (`/percent-agent/...`, authenticated and
 * XSRF-checked like the contents API): the one helper the dialogs use.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

/**
 * The JSON answer of `route` (under the server's base URL, with `query` when given). A
 * refusal throws an Error whose message is one line: the HTTP status of its kind, then the
 * server's `message` (or its text).
 */
export async function requestServer<T>(
  route: string,
  init: RequestInit = {},
  query?: { [key: string]: string }
): Promise<T> {
  const settings = ServerConnection.makeSettings();
  let url = URLExt.join(settings.baseUrl, route);
  if (query) {
    url += URLExt.objectToQueryString(query);
  }
  const response = await ServerConnection.makeRequest(url, init, settings);
  if (!response.ok) {
    const text = await response.text();
    let message = text;
    try {
      message = (JSON.parse(text) as { message?: string }).message ?? text;
    } catch {
      // not JSON: its text
    }
    throw new Error(`${response.status} ${message}`.trim());
  }
  return (await response.json()) as T;
}
