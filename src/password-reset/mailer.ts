import type { Transporter } from 'nodemailer';

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

/** Sends Latchkey's mails. Throws when the mail server cannot take one; the caller logs it. */
export interface Mailer {
  send(mail: Mail): Promise<void>;
  close(): void;
}

/**
 * Mail through the SMTP server of `smtp.url` (nodemailer). Short timeouts: a mail server that hangs
 * must not keep a reset request's work (and its connection) around for nodemailer's default minutes.
 * nodemailer logs nothing by default, so neither the URL's password nor a mail's link reaches a log.
 * nodemailer loads at the first mail (a twentieth of a second of every start otherwise, for a
 * library most processes never call).
 */
export function smtpMailer(url: string, from: string): Mailer {
  let transport: Promise<Transporter> | undefined;
  const open = () =>
    (transport ??= import('nodemailer').then(({ default: nodemailer }) =>
      nodemailer.createTransport({ url, connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 }),
    ));
  return {
    async send(mail) {
      await (await open()).sendMail({ from, ...mail });
    },
    close: () => {
      void transport?.then((t) => t.close()).catch(() => undefined);
    },
  };
}
