/** The QR code of an `otpauth://` URI as an inline SVG, drawn here: no image service sees the secret. */
export async function qrSvg(uri: string): Promise<string> {
  // Loaded at the first enrolment, not at start.
  const { default: QRCode } = await import('qrcode');
  return QRCode.toString(uri, { type: 'svg', margin: 1, errorCorrectionLevel: 'M' });
}
