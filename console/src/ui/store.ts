import { useEffect, useState } from 'preact/hooks';

/** A value the whole console reads (who is signed in), with a hook that re-renders on change. */
export function store<T>(initial: T) {
  let value = initial;
  const listeners = new Set<(v: T) => void>();
  return {
    get: () => value,
    set(next: T) {
      value = next;
      for (const l of listeners) l(next);
    },
    use(): T {
      const [v, setV] = useState(value);
      useEffect(() => {
        listeners.add(setV);
        setV(value);
        return () => void listeners.delete(setV);
      }, []);
      return v;
    },
  };
}
