/// Which protocol updates a device, with which parameters, and why: decided before connecting
/// from the command line, the firmware package and the device catalog, in that order.
///
/// Rules:
/// 1. `--protocol` decides when given.
/// 2. Otherwise the package manifest's `protocol` and the matched family's protocol decide; when
///    both speak and disagree, that is an error naming both sources.
/// 3. Otherwise there is no protocol, and the error says how to give one.
///
/// Parameters come from the matched family when it uses the chosen protocol, overridden by
/// `--param` values.
public struct ProtocolSelection: Sendable {
    /// The chosen protocol.
    public var protocolName: String
    /// Its parameters.
    public var parameters: ProtocolParameters
    /// The device family that matched, if any.
    public var family: DeviceFamily?
    /// Why, one line per rule that applied, in order.
    public var reasons: [String]

    /// Decides.
    ///
    /// - Throws: ``OTAError/Code/selectionFailed`` when the sources disagree or none speaks.
    public static func decide(
        explicitProtocol: String?,
        explicitParameters: ProtocolParameters,
        package: FirmwarePackage?,
        family: DeviceFamily?,
        device: String
    ) throws(OTAError) -> ProtocolSelection {
        var reasons: [String] = []
        if let family {
            reasons.append("\(device) matches family '\(family.name)' (\(family.source)): \(family.match.explanation) → protocol '\(family.protocolName)'")
        } else {
            reasons.append("\(device) matches no device family")
        }
        if let package, let name = package.protocolName {
            reasons.append("package \(package.source) asks for protocol '\(name)'")
        }
        let chosen: String
        if let explicitProtocol {
            chosen = explicitProtocol
            reasons.append("--protocol \(explicitProtocol) decides")
        } else if let packageProtocol = package?.protocolName {
            if let family, family.protocolName != packageProtocol {
                throw OTAError(
                    .selectionFailed,
                    "the package (\(package!.source)) says protocol '\(packageProtocol)' but \(device)'s family '\(family.name)' (\(family.source)) says '\(family.protocolName)'; fix one, or pass --protocol to decide"
                )
            }
            chosen = packageProtocol
        } else if let family {
            chosen = family.protocolName
        } else {
            throw OTAError(
                .selectionFailed,
                "no protocol for \(device): it matches no device family in the catalogs and the firmware has no package manifest naming one; pass --protocol NAME or --catalog FILE"
            )
        }
        var parameters = ProtocolParameters()
        if let family, family.protocolName == chosen {
            parameters = family.parameters
            if !family.parameters.values.isEmpty {
                reasons.append(
                    "parameters from family '\(family.name)': "
                        + family.parameters.values.keys.sorted().map { "\($0)=\(family.parameters.values[$0]!)" }.joined(separator: ", "))
            }
        }
        for (key, value) in explicitParameters.values.sorted(by: { $0.key < $1.key }) {
            parameters[key] = value
            reasons.append("--param \(key)=\(value)")
        }
        return ProtocolSelection(protocolName: chosen, parameters: parameters, family: family, reasons: reasons)
    }
}
