/** Which partition holds a LangGraph namespace's (or a user's) memory — the one mapping every
 * adapter uses (the Python client's `_partitions.py`, the server's `semmem/stored/namespaces.py`):
 * the labels, each with `%` written `%25` and `/` written `%2F`, joined by `/`. */

export const MAX_PARTITION_BYTES = 1024;

/** The partition a namespace is stored in (`RangeError` past 1,024 UTF-8 bytes, or none). */
export function partitionOf(namespace: readonly string[]): string {
  const partition = namespace.map((label) => label.replaceAll("%", "%25").replaceAll("/", "%2F")).join("/");
  if (!partition || Buffer.byteLength(partition, "utf-8") > MAX_PARTITION_BYTES) {
    throw new RangeError(`a namespace maps to a partition of more than ${MAX_PARTITION_BYTES} UTF-8 bytes (or none)`);
  }
  return partition;
}

/** The namespace of a partition (`partitionOf`'s inverse). */
export function namespaceOf(partition: string): string[] {
  return partition.split("/").map((label) => label.replaceAll("%2F", "/").replaceAll("%25", "%"));
}

/** The partition of a user's memory: that of the namespace `[user]`, as the store maps it. */
export function userPartition(user: string): string {
  if (!user) throw new RangeError("no user: an empty user id names no memory");
  return partitionOf([user]);
}
