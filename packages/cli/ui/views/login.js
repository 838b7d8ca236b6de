// The token form: shown when the server answers 401, or when the token given cannot work (then with
// why). Invariant: the token typed goes to sessionStorage only (api.js), never into the address.
import { setToken } from '../api.js'
import { h } from '../dom.js'

/**
 * @param {HTMLElement} root
 * @param {string} why why the token given cannot work ('' when it is just missing or wrong)
 * @param {() => void} done called once a token is given (the router shows the view again)
 */
export function loginView(root, why, done) {
  const input = h('input', { type: 'password', id: 'token', placeholder: 'bearer token', autocomplete: 'off' })
  root.replaceChildren(
    h(
      'div',
      { class: 'card login' },
      h('h1', {}, 'A token is needed'),
      h('p', { class: 'muted' }, 'This process serves its data only with a bearer token (the manager\u2019s http.token).'),
      why ? h('p', { class: 'errmsg', id: 'token-why' }, why) : null,
      h(
        'form',
        {
          onsubmit: (e) => {
            e.preventDefault()
            setToken(input.value)
            done()
          },
        },
        input,
        ' ',
        h('button', { type: 'submit' }, 'Open'),
      ),
    ),
  )
}
