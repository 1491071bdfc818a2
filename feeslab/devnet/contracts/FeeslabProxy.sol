// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title FeeslabProxy
/// @notice An EIP-1967 upgradeable proxy. Its own state lives at hashed slots so that it never
///         collides with the implementation's slots 0, 1, 2, ...
/// @dev The implementation address is at keccak256("eip1967.proxy.implementation") - 1 and the
///      admin at keccak256("eip1967.proxy.admin") - 1; the proxy has no other storage.
///      Dispatch: `upgradeTo` runs in the proxy only when the admin calls it (anyone else's call is
///      delegated like any other). `implementation()` and `admin()` are plain views that anyone may
///      call; they shadow implementation functions with the same selectors. Every other call,
///      from anyone including the admin, is delegated to the implementation.
contract FeeslabProxy {
    /// @dev bytes32(uint256(keccak256("eip1967.proxy.implementation")) - 1)
    bytes32 internal constant IMPLEMENTATION_SLOT =
        0x360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc;
    /// @dev bytes32(uint256(keccak256("eip1967.proxy.admin")) - 1)
    bytes32 internal constant ADMIN_SLOT =
        0xb53127684a568b3173ae13b9f8a6016e243e63b6e8ee1178d6a717850b5d6103;

    /// @notice Emitted when the implementation changes (EIP-1967).
    event Upgraded(address indexed implementation);
    /// @notice Emitted when the admin is set (EIP-1967).
    event AdminChanged(address previousAdmin, address newAdmin);

    /// @notice `account` has no code, so it cannot be an implementation.
    error NotAContract(address account);

    /// @param implementation_ The first implementation.
    /// @param admin_ The account that may upgrade.
    /// @param initData Calldata delegated to the implementation once, unless empty (e.g. initialize()).
    constructor(address implementation_, address admin_, bytes memory initData) payable {
        _setImplementation(implementation_);
        emit AdminChanged(address(0), admin_);
        assembly {
            sstore(ADMIN_SLOT, admin_)
        }
        if (initData.length > 0) {
            (bool ok, bytes memory reason) = implementation_.delegatecall(initData);
            if (!ok) {
                assembly {
                    revert(add(reason, 32), mload(reason))
                }
            }
        }
    }

    /// @notice Points the proxy at `newImplementation`; state is kept. Admin only (others are delegated).
    function upgradeTo(address newImplementation) external payable {
        if (msg.sender != admin()) {
            _delegate(implementation());
        }
        _setImplementation(newImplementation);
    }

    /// @notice The current implementation, read from its EIP-1967 slot.
    function implementation() public view returns (address impl) {
        assembly {
            impl := sload(IMPLEMENTATION_SLOT)
        }
    }

    /// @notice The admin, read from its EIP-1967 slot.
    function admin() public view returns (address adm) {
        assembly {
            adm := sload(ADMIN_SLOT)
        }
    }

    /// @notice Delegates any other call to the implementation.
    fallback() external payable {
        _delegate(implementation());
    }

    /// @notice Delegates plain ether transfers to the implementation.
    receive() external payable {
        _delegate(implementation());
    }

    function _setImplementation(address newImplementation) private {
        if (newImplementation.code.length == 0) revert NotAContract(newImplementation);
        assembly {
            sstore(IMPLEMENTATION_SLOT, newImplementation)
        }
        emit Upgraded(newImplementation);
    }

    /// @dev Runs the implementation's code on this contract's storage; returns or reverts with its data.
    function _delegate(address impl) private {
        assembly {
            calldatacopy(0, 0, calldatasize())
            let ok := delegatecall(gas(), impl, 0, calldatasize(), 0, 0)
            returndatacopy(0, 0, returndatasize())
            switch ok
            case 0 {
                revert(0, returndatasize())
            }
            default {
                return(0, returndatasize())
            }
        }
    }
}
