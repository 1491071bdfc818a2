// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title GasBurner
/// @notice Functions whose gas depends on their input and on the state, for fee studies.
/// @dev Storage layout: 0: cells (mapping, cell k at keccak256(abi.encode(k, 0))), 1: filled.
contract GasBurner {
    /// @notice Cell values; cells[0 .. filled) are non-zero.
    mapping(uint256 => uint256) public cells;
    /// @notice Number of cells written by burn().
    uint256 public filled;

    /// @notice Writes n new cells, cells[filled .. filled + n): each a zero-to-non-zero store
    ///         (about 22,100 gas, cold); then bumps filled.
    function burn(uint256 n) external {
        uint256 start = filled;
        for (uint256 i = start; i < start + n; ++i) {
            cells[i] = i + 1;
        }
        filled = start + n;
    }

    /// @notice Adds one to cells[0 .. n): about 5,000 gas per cell that already holds a non-zero
    ///         value (cold non-zero to non-zero), about 22,100 per cell that was zero.
    function rewrite(uint256 n) external {
        for (uint256 i = 0; i < n; ++i) {
            cells[i] += 1;
        }
    }

    /// @notice Hashes n times: pure compute, no storage (declared pure, callable like a view).
    function cost(uint256 n) external pure returns (bytes32 h) {
        for (uint256 i = 0; i < n; ++i) {
            h = keccak256(abi.encodePacked(h, i));
        }
    }
}
