/// The dashboard page: one HTML file with its CSS and JavaScript inline, compiled into the binary (SwiftPM's
/// `embedInCode`), so that it is served with nothing to install and loads nothing from any other host.
enum Dashboard {
    static let page: [UInt8] = PackageResources.dashboard_html
}
