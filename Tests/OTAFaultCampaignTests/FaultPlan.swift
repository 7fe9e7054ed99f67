import Foundation
import OTACore
import OTATransportSimulator

/// A kind of fault the campaign injects, each one of the simulator's ``LinkFaults``.
enum FaultKind: String, CaseIterable, Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The link drops once the device has received N data bytes (`disconnectAtBytes`).
    case disconnect
    /// The device restarts once it has received N data bytes: RAM lost, flash kept (`rebootAtBytes`).
    case reboot
    /// From N bytes on, data writes are lost while requests still get answers; the link drops
    /// 2 s later (`dyingLinkAtBytes`).
    case dyingLink
    /// From N bytes on, the device takes no packets and keeps the link (`stallAtBytes`).
    case stall
    /// Data write number N is lost on the way (`dropWrites`).
    case dropWrite
    /// Data write number N arrives twice (`duplicateWrites`).
    case duplicateWrite
    /// Data write number N arrives with its last byte flipped (`corruptWrites`).
    case corruptWrite
    /// Data write number N arrives after the one that follows it (`reorderWrites`).
    case reorderWrite
    /// From N bytes on, every flash erase and write fails (`failFlashAtBytes`).
    case flashFailure

    /// Whether the fault is placed at a write index rather than a byte count.
    var isIndexed: Bool {
        switch self {
        case .dropWrite, .duplicateWrite, .corruptWrite, .reorderWrite: true
        default: false
        }
    }

    /// Whether the fault takes the link down (or makes the engine take it down): each one may
    /// cost one reconnection.
    var losesLink: Bool {
        switch self {
        case .disconnect, .reboot, .dyingLink, .stall: true
        default: false
        }
    }

    /// Whether `LinkFaults` holds at most one of this kind.
    var isSingle: Bool {
        switch self {
        case .dyingLink, .stall, .flashFailure: true
        default: false
        }
    }

    var description: String { rawValue }

    static func < (lhs: FaultKind, rhs: FaultKind) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// One injected fault: its kind and where it strikes (a data byte count, or a data write index
/// counted from 0 across connections).
struct PlannedFault: Sendable, Hashable, CustomStringConvertible {
    var kind: FaultKind
    var point: Int

    var description: String { kind.isIndexed ? "\(kind)@write \(point)" : "\(kind)@byte \(point)" }
}

/// Everything one campaign run does, drawn from its seed: the protocol, the link, the image size
/// and 1–3 faults. The same seed gives the same plan (and, the simulation being deterministic,
/// the same run).
struct FaultPlan: Sendable, CustomStringConvertible {
    var seed: UInt64
    var protocolIndex: Int
    var protocolName: String
    var link: CampaignLink
    var imageSize: Int
    var faults: [PlannedFault]

    var description: String {
        "seed \(seed): \(protocolName) on \(link), \(imageSize) bytes, faults [\(faults.map(\.description).joined(separator: ", "))]"
    }

    /// The plan for `seed` over `protocols`.
    static func make(seed: UInt64, protocols: [CampaignProtocol]) -> FaultPlan {
        var random = SeededRandom(seed: seed &* 0x9E37_79B9_7F4A_7C15 &+ 0x5EED)
        func pick(_ count: Int) -> Int { Int(random.next() % UInt64(count)) }
        func chance(_ percent: Int) -> Bool { pick(100) < percent }

        let protocolIndex = pick(protocols.count)
        let entry = protocols[protocolIndex]
        let link = entry.links[pick(entry.links.count)]
        let payload = entry.payloadSize(on: link)
        let writeLength = payload + entry.headerLength

        // Sizes near the edges that matter: whole writes, whole 4 KiB objects and sectors, one
        // byte either side of them, and odd sizes anywhere in 2–40 KB.
        let imageSize: Int
        switch pick(5) {
        case 0: imageSize = max(2048, (2048 + pick(38 * 1024)) / payload * payload)
        case 1: imageSize = max(2048, (2048 + pick(38 * 1024)) / payload * payload + (chance(50) ? 1 : -1))
        case 2: imageSize = 4096 * (1 + pick(9))
        case 3: imageSize = 4096 * (1 + pick(9)) + (chance(50) ? 1 : -1)
        default: imageSize = (2048 + pick(38 * 1024)) | 1
        }

        // The wire carries the image's writes plus what goes before them (an init packet).
        let prefixBytes = entry.prefixBytes
        let imageWrites = (imageSize + payload - 1) / payload
        let prefixWrites = (prefixBytes + payload - 1) / payload
        let totalWrites = imageWrites + prefixWrites
        let totalBytes = prefixBytes + imageSize + imageWrites * entry.headerLength

        // A third of the damaged writes go where recovery differs: the image's first or last
        // write (nothing follows the last to reveal a gap), the last of a 16-chunk batch (the one
        // an ACK follows) or of a 4 KiB object (the one its checksum follows). A generator of
        // its own, so the rest of the plan draws as before.
        var edges = SeededRandom(seed: seed ^ 0xED6E_5EED)
        func edge(_ index: Int) -> Int {
            let batches = max(1, imageWrites / 16)
            let objects = max(1, (imageSize + 4095) / 4096)
            switch edges.next() % 12 {
            case 0: return totalWrites - 1
            case 1: return prefixWrites
            case 2: return min(totalWrites - 1, prefixWrites + 16 * (1 + Int(edges.next() % UInt64(batches))) - 1)
            case 3: return min(totalWrites - 1, prefixWrites + ((1 + Int(edges.next() % UInt64(objects))) * 4096 + payload - 1) / payload - 1)
            default: return index
            }
        }

        var faults: [PlannedFault] = []
        let count = 1 + pick(3)
        while faults.count < count {
            let kind = FaultKind.allCases[pick(FaultKind.allCases.count)]
            if kind.isSingle, faults.contains(where: { $0.kind == kind }) { continue }
            let point: Int
            if kind.isIndexed {
                point = edge(pick(totalWrites))
            } else if chance(20) {
                // On a write boundary: the fault strikes exactly after a whole write.
                point = max(1, prefixBytes + (1 + pick(imageWrites)) * writeLength)
            } else {
                point = 1 + pick(totalBytes)
            }
            // Two faults of a kind at one point would strike once.
            if faults.contains(PlannedFault(kind: kind, point: point)) { continue }
            faults.append(PlannedFault(kind: kind, point: point))
        }
        faults.sort { ($0.kind, $0.point) < ($1.kind, $1.point) }
        return FaultPlan(
            seed: seed, protocolIndex: protocolIndex, protocolName: entry.name, link: link, imageSize: imageSize, faults: faults)
    }

    /// The plan's faults as the simulator takes them.
    var linkFaults: LinkFaults {
        var faults = LinkFaults()
        for fault in self.faults {
            switch fault.kind {
            case .disconnect: faults.disconnectAtBytes.append(fault.point)
            case .reboot: faults.rebootAtBytes.append(fault.point)
            case .dyingLink: faults.dyingLinkAtBytes = fault.point
            case .stall: faults.stallAtBytes = fault.point
            case .dropWrite: faults.dropWrites.insert(fault.point)
            case .duplicateWrite: faults.duplicateWrites.insert(fault.point)
            case .corruptWrite: faults.corruptWrites.insert(fault.point)
            case .reorderWrite: faults.reorderWrites.insert(fault.point)
            case .flashFailure: faults.failFlashAtBytes = fault.point
            }
        }
        faults.disconnectAtBytes.sort()
        faults.rebootAtBytes.sort()
        return faults
    }

    /// The faults that struck during the run, judged from what is left of `remaining` (byte
    /// thresholds are removed as they fire) and from how many data writes arrived (an indexed
    /// fault struck when its write arrived).
    func fired(remaining: LinkFaults, writesArrived: Int) -> [PlannedFault] {
        var disconnects = remaining.disconnectAtBytes
        var reboots = remaining.rebootAtBytes
        return faults.filter { fault in
            switch fault.kind {
            case .disconnect:
                guard let index = disconnects.firstIndex(of: fault.point) else { return true }
                disconnects.remove(at: index)
                return false
            case .reboot:
                guard let index = reboots.firstIndex(of: fault.point) else { return true }
                reboots.remove(at: index)
                return false
            case .dyingLink: return remaining.dyingLinkAtBytes == nil
            case .stall: return remaining.stallAtBytes == nil
            case .flashFailure: return remaining.failFlashAtBytes == nil
            case .dropWrite, .duplicateWrite, .corruptWrite, .reorderWrite: return fault.point < writesArrived
            }
        }
    }
}
