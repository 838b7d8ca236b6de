// TLS material generated at startup, in memory: a throwaway CA and a serving certificate it signs, so
// kubectl and client-go verify the server against the CA in the kubeconfig. No key is ever written to
// disk or kept in the repository. Node's crypto makes the RSA keys (natively, off the main thread);
// node-forge, loaded only when TLS is asked for, builds and signs the X.509 certificates, which
// Node's crypto cannot.
import { generateKeyPair } from 'node:crypto'
import { isIP } from 'node:net'
import { promisify } from 'node:util'

export interface TlsMaterial {
  /** The CA certificate (PEM): what a client trusts (`certificate-authority-data`). */
  caPem: string
  certPem: string
  keyPem: string
}

const rsa = async () =>
  (await promisify(generateKeyPair)('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  })) as { publicKey: string; privateKey: string }

/** A CA and a serving certificate for `hosts` (IPs and DNS names, plus localhost), valid for a year. */
export async function generateTls(hosts: string[]): Promise<TlsMaterial> {
  const { default: forge } = await import('node-forge')
  const [caKeys, keys] = await Promise.all([rsa(), rsa()])
  const caKey = forge.pki.privateKeyFromPem(caKeys.privateKey)
  const serial = () => '01' + forge.util.bytesToHex(forge.random.getBytesSync(8))
  const validity = (c: ReturnType<typeof forge.pki.createCertificate>) => {
    c.validity.notBefore = new Date(Date.now() - 60_000)
    c.validity.notAfter = new Date(Date.now() + 365 * 24 * 3600_000)
  }

  const ca = forge.pki.createCertificate()
  ca.publicKey = forge.pki.publicKeyFromPem(caKeys.publicKey)
  ca.serialNumber = serial()
  validity(ca)
  const caName = [{ name: 'commonName', value: 'statewright-testserver-ca' }]
  ca.setSubject(caName)
  ca.setIssuer(caName)
  ca.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ])
  ca.sign(caKey, forge.md.sha256.create())

  const cert = forge.pki.createCertificate()
  cert.publicKey = forge.pki.publicKeyFromPem(keys.publicKey)
  cert.serialNumber = serial()
  validity(cert)
  cert.setSubject([{ name: 'commonName', value: 'statewright-testserver' }])
  cert.setIssuer(caName)
  const altNames = [...new Set(['localhost', '127.0.0.1', ...hosts])].map((h) => (isIP(h) ? { type: 7, ip: h } : { type: 2, value: h }))
  cert.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    { name: 'subjectAltName', altNames },
    { name: 'authorityKeyIdentifier', keyIdentifier: ca.generateSubjectKeyIdentifier().getBytes() },
  ])
  cert.sign(caKey, forge.md.sha256.create())
  return { caPem: forge.pki.certificateToPem(ca), certPem: forge.pki.certificateToPem(cert), keyPem: keys.privateKey }
}
