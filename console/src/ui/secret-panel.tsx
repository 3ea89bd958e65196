import { Fragment, type ComponentChildren } from 'preact';
import { useEffect } from 'preact/hooks';
import { CopyButton } from './kit.tsx';

/** One value of the panel: `id` names its `<code>`, `copy` its copy button. */
interface ShownValue {
  term: string;
  id: string;
  value: string;
  copy: string;
}

/**
 * A new secret on screen once (a client secret, a SCIM token, a webhook's signing secret): only its
 * hash is stored, so this is the one time it can be copied. The title (`<id>-title`) takes the focus,
 * so a screen reader reads the panel out; `children` say what to do with it.
 */
export function SecretPanel({
  id,
  title,
  values,
  onClose,
  children,
}: {
  id: string;
  title: ComponentChildren;
  values: ShownValue[];
  onClose: () => void;
  children: ComponentChildren;
}) {
  const titleId = `${id}-title`;
  const shown = values.map((v) => v.value).join(' ');
  useEffect(() => document.getElementById(titleId)?.focus(), [shown]);
  return (
    <section class="panel secret" aria-labelledby={titleId}>
      <h2 id={titleId} tabIndex={-1}>
        {title}
      </h2>
      {children}
      <dl class="pairs">
        {values.map((v) => (
          <Fragment key={v.id}>
            <dt>{v.term}</dt>
            <dd>
              <code id={v.id}>{v.value}</code> <CopyButton text={v.value} label={v.copy} />
            </dd>
          </Fragment>
        ))}
      </dl>
      <button type="button" onClick={onClose}>
        I have stored it
      </button>
    </section>
  );
}
