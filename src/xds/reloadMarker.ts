// The file the control plane renames into the directory of a changed
// certificate file so that the sidecar's Envoy, which watches that directory
// (translator/secrets.ts, watched_directory) and notices renames only,
// re-reads it (sources/certificateFiles.ts). Deployments make room for it
// (src/deploy/kubeadm.ts mounts the marker paths into the replica's pod).

/** What is renamed into a changed file's directory to make Envoy re-read it. */
export const RELOAD_MARKER = '.mvproxy-reload';
