/** Reading an HTML form the way a browser submits it, whatever the order of the attributes. */

export interface HtmlForm {
  method: string;
  /** The `action` attribute as written (may be relative or empty). */
  action: string;
  /** The hidden inputs, plus the name/value of the submit button a user would press, if it has one. */
  fields: Record<string, string>;
}

const unescapeHtml = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&#x27;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

function attributes(tag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of tag.matchAll(/([a-zA-Z_:][-\w:.]*)\s*(?:=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?/g)) {
    out[m[1]!.toLowerCase()] = unescapeHtml(m[2] ?? m[3] ?? m[4] ?? '');
  }
  return out;
}

/** Every `<form>` on the page, in order. */
export function htmlForms(html: string): HtmlForm[] {
  const forms: HtmlForm[] = [];
  for (const m of html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)) {
    const attrs = attributes(m[1]!);
    const inner = m[2]!;
    const fields: Record<string, string> = {};
    for (const input of inner.matchAll(/<input\b([^>]*)>/gi)) {
      const a = attributes(input[1]!);
      if ((a.type ?? '').toLowerCase() === 'hidden' && a.name) fields[a.name] = a.value ?? '';
    }
    // The button a user presses to confirm: the first submit button (or the one that says so), if named.
    const buttons = [...inner.matchAll(/<button\b([^>]*)>([\s\S]*?)<\/button>/gi)].map((b) => ({ attrs: attributes(b[1]!), text: b[2]! }));
    const submits = buttons.filter((b) => (b.attrs.type ?? 'submit').toLowerCase() === 'submit');
    const confirm = submits.find((b) => /sign.?out|log.?out|yes|confirm/i.test(`${b.text} ${b.attrs.value ?? ''}`)) ?? submits[0];
    if (confirm?.attrs.name) fields[confirm.attrs.name] = confirm.attrs.value ?? '';
    forms.push({ method: (attrs.method ?? 'get').toLowerCase(), action: attrs.action ?? '', fields });
  }
  return forms;
}
