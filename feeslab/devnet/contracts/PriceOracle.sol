// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title PriceOracle
/// @notice A price feed that one updater pushes rounds to, written to show packed structs and
///         dynamic arrays in storage.
/// @dev Storage layout (slot: variable):
///      0: updater (bytes 0..19) and heartbeat (bytes 20..27), packed
///      1: latest, a Round packed in one slot: roundId (bytes 0..9), answer (10..25), updatedAt (26..30)
///      2: rounds.length; element i (one slot each, packed as latest) at keccak256(abi.encode(2)) + i
///      3: submittedAtBlock, value of round r at keccak256(abi.encode(r, 3))
contract PriceOracle {
    /// @notice One answer. 80 + 128 + 40 = 248 bits: the three fields share one slot.
    struct Round {
        uint80 roundId;
        int128 answer;
        uint40 updatedAt;
    }

    /// @notice The only account that may submit.
    address public updater;
    /// @notice Seconds after which the latest answer is stale.
    uint64 public heartbeat;
    /// @notice The most recent round (roundId 0 before the first submission).
    Round public latest;
    /// @notice Every round, oldest first: rounds[i].roundId == i + 1.
    Round[] public rounds;
    /// @notice Block number in which each round was submitted.
    mapping(uint80 => uint256) public submittedAtBlock;

    /// @notice Emitted for each new round.
    event RoundSubmitted(uint80 indexed roundId, int128 answer, uint40 updatedAt);

    /// @notice `caller` is not the updater.
    error NotUpdater(address caller);

    /// @param updater_ The account allowed to submit.
    /// @param heartbeat_ Seconds after which an answer is stale.
    constructor(address updater_, uint64 heartbeat_) {
        updater = updater_;
        heartbeat = heartbeat_;
    }

    /// @notice Records `answer` as a new round; updater only.
    /// @return roundId The new round's id (1 for the first).
    function submit(int128 answer) external returns (uint80 roundId) {
        if (msg.sender != updater) revert NotUpdater(msg.sender);
        roundId = latest.roundId + 1;
        Round memory round = Round(roundId, answer, uint40(block.timestamp));
        latest = round;
        rounds.push(round);
        submittedAtBlock[roundId] = block.number;
        emit RoundSubmitted(roundId, answer, round.updatedAt);
    }

    /// @notice Number of rounds submitted.
    function roundCount() external view returns (uint256) {
        return rounds.length;
    }

    /// @notice Round at index `i` (roundId i + 1); reverts with Panic(0x32) past the end.
    function getRound(uint256 i) external view returns (Round memory) {
        return rounds[i];
    }

    /// @notice True when the latest answer is older than the heartbeat (or there is none).
    function isStale() external view returns (bool) {
        return block.timestamp > uint256(latest.updatedAt) + heartbeat;
    }
}
