// SPDX-License-Identifier: Apache-2.0
// KvGet: one HTTPS GET with Java's SunJSSE (its own ClientHello: its
// extension order) for the kernel-verified path suite (kverify.sh).
// Prints one JSON line: ok, code or errno.
//
//   java KvGet URL CAFILE
import java.io.FileInputStream;
import java.net.URL;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import javax.net.ssl.HttpsURLConnection;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

public class KvGet {
	public static void main(String[] a) {
		try {
			KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
			ks.load(null, null);
			try (FileInputStream in = new FileInputStream(a[1])) {
				ks.setCertificateEntry("kv", CertificateFactory.getInstance("X.509")
								     .generateCertificate(in));
			}
			TrustManagerFactory tmf =
				TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
			tmf.init(ks);
			SSLContext ctx = SSLContext.getInstance("TLS");
			ctx.init(null, tmf.getTrustManagers(), null);
			HttpsURLConnection c = (HttpsURLConnection) new URL(a[0]).openConnection(
				java.net.Proxy.NO_PROXY);
			c.setSSLSocketFactory(ctx.getSocketFactory());
			c.setConnectTimeout(5000);
			c.setReadTimeout(5000);
			int code = c.getResponseCode();
			System.out.println("{\"client\": \"java\", \"ok\": true, \"code\": \"" + code + "\"}");
		} catch (Exception e) {
			System.out.println("{\"client\": \"java\", \"ok\": false, \"errno\": \""
					   + e.getClass().getSimpleName() + "\"}");
		}
	}
}
