// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title FeeslabToken
/// @notice A minimal ERC-20 with no imports, written to show how Solidity lays out storage.
/// @dev Storage layout (slot: variable):
///      0: _balances    mapping, value of key k at keccak256(abi.encode(k, 0))
///      1: _allowances  nested mapping, value at keccak256(abi.encode(s, keccak256(abi.encode(o, 1))))
///      2: _totalSupply plain uint256
///      3: _name        string (short: data and 2*length in the slot; long: 2*length+1, data at keccak256(3))
///      4: _symbol      string, as _name
///      5: owner (bytes 0..19) and decimals (byte 20): two values packed in one slot
contract FeeslabToken {
    mapping(address => uint256) private _balances;
    mapping(address => mapping(address => uint256)) private _allowances;
    uint256 private _totalSupply;
    string private _name;
    string private _symbol;
    /// @notice The only account that may mint.
    address public owner;
    /// @notice Always 18.
    uint8 public decimals;

    /// @notice Emitted when `value` tokens move from `from` to `to` (from is zero on mint).
    event Transfer(address indexed from, address indexed to, uint256 value);
    /// @notice Emitted when `tokenOwner` lets `spender` spend `value` tokens.
    event Approval(address indexed tokenOwner, address indexed spender, uint256 value);

    /// @notice `account` holds `balance` but `needed` was asked for.
    error InsufficientBalance(address account, uint256 balance, uint256 needed);
    /// @notice `spender` may spend `allowance` but `needed` was asked for.
    error InsufficientAllowance(address spender, uint256 allowance, uint256 needed);
    /// @notice `caller` is not the owner.
    error NotOwner(address caller);

    /// @param name_ The token's name.
    /// @param symbol_ The token's symbol.
    /// @param supply Amount minted to the deployer.
    constructor(string memory name_, string memory symbol_, uint256 supply) {
        _name = name_;
        _symbol = symbol_;
        owner = msg.sender;
        decimals = 18;
        _mint(msg.sender, supply);
    }

    /// @notice The token's name.
    function name() external view returns (string memory) {
        return _name;
    }

    /// @notice The token's symbol.
    function symbol() external view returns (string memory) {
        return _symbol;
    }

    /// @notice All tokens in existence.
    function totalSupply() external view returns (uint256) {
        return _totalSupply;
    }

    /// @notice Tokens held by `account`.
    function balanceOf(address account) external view returns (uint256) {
        return _balances[account];
    }

    /// @notice Tokens `spender` may still spend on behalf of `tokenOwner`.
    function allowance(address tokenOwner, address spender) external view returns (uint256) {
        return _allowances[tokenOwner][spender];
    }

    /// @notice Moves `value` tokens from the caller to `to`.
    function transfer(address to, uint256 value) external returns (bool) {
        _transfer(msg.sender, to, value);
        return true;
    }

    /// @notice Lets `spender` spend up to `value` of the caller's tokens (replaces the old allowance).
    function approve(address spender, uint256 value) external returns (bool) {
        _allowances[msg.sender][spender] = value;
        emit Approval(msg.sender, spender, value);
        return true;
    }

    /// @notice Moves `value` tokens from `from` to `to`, spending the caller's allowance.
    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        uint256 allowed = _allowances[from][msg.sender];
        if (allowed < value) revert InsufficientAllowance(msg.sender, allowed, value);
        unchecked {
            _allowances[from][msg.sender] = allowed - value;
        }
        _transfer(from, to, value);
        return true;
    }

    /// @notice Creates `value` new tokens for `to`; owner only.
    function mint(address to, uint256 value) external {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        _mint(to, value);
    }

    function _transfer(address from, address to, uint256 value) private {
        uint256 balance = _balances[from];
        if (balance < value) revert InsufficientBalance(from, balance, value);
        unchecked {
            _balances[from] = balance - value;
        }
        _balances[to] += value;
        emit Transfer(from, to, value);
    }

    function _mint(address to, uint256 value) private {
        _totalSupply += value;
        unchecked {
            _balances[to] += value; // cannot overflow: bounded by _totalSupply
        }
        emit Transfer(address(0), to, value);
    }
}
