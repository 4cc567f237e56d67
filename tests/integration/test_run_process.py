print('not written')
