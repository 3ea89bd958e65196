/** SQLite answers 0/1 and PostgreSQL true/false; bigint columns come back as strings from pg. */
export const bool = (v: unknown): boolean => v === true || v === 1 || v === '1';
export const num = (v: unknown): number => (v == null ? 0 : Number(v));
export const numOrNull = (v: unknown): number | null => (v == null ? null : Number(v));
export const json = <T>(v: unknown, fallback: T): T => {
  if (v == null || v === '') return fallback;
  return typeof v === 'string' ? (JSON.parse(v) as T) : (v as T);
};
