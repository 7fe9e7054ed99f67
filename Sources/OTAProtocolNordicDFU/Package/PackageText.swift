/// Small text helpers shared by the package readers' messages and reports.
enum PackageText {
    /// "64 MiB" for limits given in bytes.
    static func megabytes(_ bytes: Int) -> String {
        bytes % (1 << 20) == 0 ? "\(bytes >> 20) MiB" : "\(bytes) bytes"
    }
}
