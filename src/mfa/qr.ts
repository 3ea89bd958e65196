import QRCode from 'qrcode';

/** The QR code of an `otpauth://` URI as an inline SVG, drawn here: no image service sees the secret. */
export const qrSvg = (uri: string): Promise<string> => QRCode.toString(uri, { type: 'svg', margin: 1, errorCorrectionLevel: 'M' });
