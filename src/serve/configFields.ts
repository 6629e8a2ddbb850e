// The kinds of value a key of the serve config file holds (config.ts puts
// them together into the file's schema), each a zod schema whose message says
// what is wrong in the operator's terms; the path of the key is added when the
// problems are reported (config.ts, ConfigError).
import { existsSync } from 'node:fs';
import { isIP } from 'node:net';
import { isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import type { NetworkAddress } from '../model/cluster.js';
import type { ConfigMapRef } from '../sources/configMapRecord.js';

/** Where the file is (relative paths are relative to its folder), and whether the files it names must exist now. */
export interface ConfigLocation {
  baseDir: string;
  checkFiles: boolean;
}

/** A problem with the value at hand (its key's path is added by zod). */
type Issues = { issues: z.core.$ZodRawIssue[] };
function problem(ctx: Issues, input: unknown, message: string): typeof z.NEVER {
  ctx.issues.push({ code: 'custom', input, message });
  return z.NEVER;
}

/** A section of the file (z.object's second argument). */
export const OBJECT = { error: (issue: { input?: unknown }) => (issue.input === undefined ? 'required object' : 'must be an object') } as const;
/** A list (z.array's second argument). */
export const LIST = { error: (issue: { input?: unknown }) => (issue.input === undefined ? 'required list' : 'must be a list') } as const;

export const nonEmptyString = z
  .string({ error: (issue) => (issue.input === undefined ? 'required' : 'must be a non-empty string') })
  .min(1, 'must be a non-empty string');

export const dnsLabel = nonEmptyString.regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, { error: (issue) => `${JSON.stringify(issue.input)} is not a DNS label` });

export const boolean = z.boolean({ error: (issue) => `must be true or false, got ${JSON.stringify(issue.input)}` });

/** An integer from min to max, `fallback` when the key is absent. */
export function integer([min, max, fallback]: readonly [number, number, number]) {
  const error = (issue: { input?: unknown }) => `must be an integer from ${min} to ${max}, got ${JSON.stringify(issue.input)}`;
  return z
    .number({ error })
    .refine((n) => Number.isInteger(n) && n >= min && n <= max, { error })
    .default(fallback);
}

/** `host:port` (IPv6 in brackets). */
export const hostPort = nonEmptyString.transform((value, ctx): NetworkAddress => {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:\s]+):(\d{1,5})$/.exec(value);
  const port = m ? Number(m[2]) : NaN;
  if (!m || port < 1 || port > 65535) return problem(ctx, value, `${JSON.stringify(value)} is not host:port (port from 1 to 65535)`);
  return { host: (m[1] ?? '').replace(/^\[|\]$/g, ''), port };
});

/** An IPv4 or IPv6 address (no brackets, no port). */
export const ipAddress = nonEmptyString.refine((value) => isIP(value) !== 0, { error: (issue) => `${JSON.stringify(issue.input)} is not an IP address` });

/** `NAMESPACE/NAME` of a ConfigMap. */
export const configMapRef = nonEmptyString.transform((value, ctx): ConfigMapRef => {
  const m = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-a-z0-9.]*[a-z0-9])?)$/.exec(value);
  if (!m || value.length > 317) return problem(ctx, value, `${JSON.stringify(value)} is not NAMESPACE/NAME of a ConfigMap`);
  return { namespace: m[1] ?? '', name: m[3] ?? '' };
});

/** A path this process creates or writes (a socket, the warm-start file), made absolute. */
export const ownPath = ({ baseDir }: ConfigLocation) => nonEmptyString.transform((value) => resolve(baseDir, value));

/** A file that must be there (a certificate, a key, the kubeconfig), made absolute. */
export const existingFile = ({ baseDir, checkFiles }: ConfigLocation) =>
  nonEmptyString.transform((value, ctx) => {
    const absolute = isAbsolute(value) ? value : resolve(baseDir, value);
    return checkFiles && !existsSync(absolute) ? problem(ctx, value, `file ${absolute} does not exist`) : absolute;
  });
