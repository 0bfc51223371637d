/**
 * The permission request the Agent kernel sends with an `input_request` (`permission.ts`
 * asks it in a dialog), read defensively: a field of the wrong type is left out, never
 * trusted.
 */

/** Where the kernel puts the request in the `input_request` content. */
export const PERMISSION_KEY = 'percent_agent_permission';

export interface IPermissionOption {
  id: string;
  name: string;
  /** `allow_once`, `allow_always`, `reject_once` or `reject_always` */
  kind: string;
}

export interface IPermissionRequest {
  agent: string;
  title: string;
  kind: string;
  locations: string[];
  command: string | null;
  diffs: { path: string; diff: string }[];
  options: IPermissionOption[];
}

function isString(value: unknown): value is string {
  return typeof value === 'string';
}

function record(value: unknown): { [key: string]: unknown } | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as { [key: string]: unknown })
    : null;
}

/** The permission request an `input_request`'s content holds, or `null` for any other. */
export function permissionRequest(content: unknown): IPermissionRequest | null {
  const asked = record(record(content)?.[PERMISSION_KEY]);
  if (asked === null) {
    return null;
  }
  const options = (Array.isArray(asked['options']) ? asked['options'] : [])
    .map(record)
    .filter(
      (o): o is { [key: string]: unknown } =>
        o !== null && isString(o['id']) && isString(o['name'])
    )
    .map(o => ({
      id: o['id'] as string,
      name: o['name'] as string,
      kind: isString(o['kind']) ? o['kind'] : ''
    }));
  const diffs = (Array.isArray(asked['diffs']) ? asked['diffs'] : [])
    .map(record)
    .filter(
      (d): d is { [key: string]: unknown } => d !== null && isString(d['diff'])
    )
    .map(d => ({
      path: isString(d['path']) ? d['path'] : '',
      diff: d['diff'] as string
    }));
  const locations = Array.isArray(asked['locations'])
    ? asked['locations'].filter(isString)
    : [];
  return {
    agent: isString(asked['agent']) ? asked['agent'] : '',
    title: isString(asked['title']) ? asked['title'] : '',
    kind: isString(asked['kind']) ? asked['kind'] : '',
    locations,
    command: isString(asked['command']) ? asked['command'] : null,
    diffs,
    options
  };
}
