// Kubernetes name rules (apimachinery's k8s.io/apimachinery/pkg/util/validation):
// DNS-1123 subdomains and labels, DNS-1035 labels, with their length limits.
// Discovery (routableDiscovery.ts) and the OpenAPI index (openapi.ts) judge names with them.

export const MAX_LABEL_CHARS = 63;
export const MAX_SUBDOMAIN_CHARS = 253;

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export const DNS1123_LABEL_TEXT = 'DNS-1123 label (lowercase letters, digits and "-", starting and ending with a letter or digit)';
export const DNS1035_LABEL_TEXT = 'DNS-1035 label (lowercase letters, digits and "-", starting with a letter)';
export const DNS1123_SUBDOMAIN_TEXT = 'DNS-1123 subdomain (lowercase letters, digits, "-" and ".")';

/** At most 63 characters: lowercase letters, digits and "-", starting and ending with a letter or digit (resource names). */
export function isDns1123Label(name: string): boolean {
  return name.length <= MAX_LABEL_CHARS && DNS1123_LABEL.test(name);
}

/** At most 63 characters: lowercase letters, digits and "-", starting with a letter and ending with a letter or digit (versions). */
export function isDns1035Label(name: string): boolean {
  return name.length <= MAX_LABEL_CHARS && DNS1035_LABEL.test(name);
}

/** At most 253 characters: DNS-1123 labels joined by "." (group names). */
export function isDns1123Subdomain(name: string): boolean {
  return name.length <= MAX_SUBDOMAIN_CHARS && DNS1123_SUBDOMAIN.test(name);
}
